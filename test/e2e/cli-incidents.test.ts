import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorLines, gateway, tempDir } from "../helpers/cli.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

// `gateway incidents` against a database of its own: the same service and rules as the staff routes, actor `cli`.
describe("gateway incidents", () => {
  let work: Awaited<ReturnType<typeof tempDir>>;
  let db: TestDatabase;
  const run = (...args: string[]) => gateway(args, { cwd: work.dir, env: { DATABASE_URL: db.url } });

  beforeAll(async () => {
    work = await tempDir("gateway-e2e-incidents-");
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
    await work?.remove();
  });

  it("lists, moves and publishes an incident; publishing without corroboration fails with one line naming it", async () => {
    expect(JSON.parse((await run("incidents", "list", "--json")).stdout)).toEqual([]);
    const { rows } = await db.pool.query<{ id: string }>(
      `insert into support_incidents (public_model, error_code, title, affected)
       values ('demo-small', 'upstream_error', 'demo-small: upstream_error', '{"distinct_users": 3}') returning id`,
    );
    const id = rows[0]!.id;

    const listed = await run("incidents", "list", "--json");
    expect(listed.exitCode).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject([{ id, status: "candidate", public_model: "demo-small", linked_cases: 0 }]);

    const confirmed = await run("incidents", "update", id, "--status", "confirmed", "--summary", "Errors on demo-small, fixed.", "--json");
    expect(confirmed.exitCode).toBe(0);
    expect(JSON.parse(confirmed.stdout)).toMatchObject({ status: "confirmed", updated_by: "cli", published_at: null });

    const refused = await run("incidents", "publish", id);
    expect(refused.exitCode).toBe(1);
    expect(errorLines(refused.stderr)).toHaveLength(1);
    expect(refused.stderr).toMatch(/technical corroboration/);

    await db.pool.query("update support_incidents set corroborated_at = now() where id = $1", [id]);
    const published = await run("incidents", "publish", id, "--json");
    expect(published.exitCode).toBe(0);
    expect(JSON.parse(published.stdout).published_at).toEqual(expect.any(String));
    expect((await run("incidents", "publish", id, "--withdraw")).stdout).toMatch(/not published/);

    // The short id of the table names it.
    const table = await run("incidents", "list");
    expect(table.stdout).toMatch(/^ID\s+STATUS\s+TITLE\s+USERS\s+FAILURES\s+CASES\s+PUBLISHED\s+UPDATED$/m);
    expect(table.stdout).toContain(`${id.slice(0, 8)}  confirmed  demo-small: upstream_error  3 `);
    expect((await run("incidents", "update", id.slice(0, 8), "--status", "resolved")).stdout).toMatch(/is resolved/);
  }, 120_000);

  it("scan runs the incident scan now and prints what it raised, then what it refreshed", async () => {
    for (let i = 0; i < 10; i++) {
      await db.pool.query(
        `insert into request_logs (request_id, user_id, key_id, route, client_protocol, public_model, upstream_model, provider, fallback_path,
           status, error_class, error_code, input_tokens, output_tokens, cached_tokens, quota_charged, usage_source, latency_ms, ttfb_ms,
           streamed, received_at, created_at)
         values ($1, gen_random_uuid(), null, '/v1/chat/completions', 'openai', 'demo-broken', 'x', 'main', '{}', 502, 'upstream_unreachable',
           'upstream_unreachable', 10, 0, 0, 0, 'none', 12.5, null, false, now(), now())`,
        [`req_scan_${i}`],
      );
    }
    const first = await run("incidents", "scan");
    expect(first.exitCode, first.stderr).toBe(0);
    expect(first.stdout).toMatch(/^scan: 1 raised, 0 refreshed, 0 case\(s\) linked$/m);
    expect(first.stdout).toMatch(/^raised +[0-9a-f]{8} {2}candidate {2}demo-broken: upstream_unreachable +- +10\/10 \(100%\)/m);
    const again = JSON.parse((await run("incidents", "scan", "--json")).stdout) as {
      raised: unknown[];
      refreshed: { public_model: string }[];
    };
    expect(again.raised).toEqual([]);
    expect(again.refreshed.map((i) => i.public_model)).toEqual(["demo-broken"]);
  }, 120_000);
});
