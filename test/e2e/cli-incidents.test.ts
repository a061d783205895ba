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
  }, 120_000);
});
