import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorLines, gateway, tempDir } from "../helpers/cli.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

// `gateway resets grant|show` and `gateway users set-plan` against a real database (docs/cli.md, "Reserve resets").
describe("gateway resets and users set-plan", () => {
  let work: Awaited<ReturnType<typeof tempDir>>;
  let db: TestDatabase;
  let config: string;
  const run = (...args: string[]) => gateway([...args, "--config", config], { cwd: work.dir, env: { DATABASE_URL: db.url } });

  beforeAll(async () => {
    work = await tempDir("gateway-e2e-resets-");
    db = await createTestDatabase();
    config = path.join(work.dir, "gateway.yaml");
    writeFileSync(
      config,
      [
        "providers:\n  p: { protocol: openai, base_url: 'https://api.example.com/v1' }",
        "models:\n  m: { kind: chat, upstream: m, targets: [p] }",
        "plans:\n  free: { daily_tokens: 1000, weekly_resets: 1, context_limit: 128000 }\n  pro: { daily_tokens: 5000, weekly_resets: 3, context_limit: 128000 }",
        "",
      ].join("\n"),
    );
  });
  afterAll(async () => {
    await db?.drop();
    await work?.remove();
  });

  it("grants with and without an expiry, shows them, moves a user's plan, and refuses bad input with one line", async () => {
    const created = await run("users", "create", "--email", "gifted@example.test", "--password", "correct horse battery", "--json");
    expect(created.exitCode).toBe(0);
    const user = JSON.parse(created.stdout) as { id: string };

    const granted = await run(
      "resets",
      "grant",
      "--user",
      "gifted@example.test",
      "--count",
      "2",
      "--expires",
      "2099-12-31",
      "--note",
      "outage",
      "--json",
    );
    expect(granted.exitCode).toBe(0);
    expect(JSON.parse(granted.stdout)).toMatchObject({
      user_id: user.id,
      weekly_allowance: 1,
      gifted_left: 2,
      gifts: [{ count: 2, expires_at: "2100-01-01T00:00:00.000Z" }],
      grants: [{ count: 2, note: "outage", granted_by: "cli", expires_at: "2100-01-01T00:00:00.000Z" }],
    });
    expect((await run("resets", "grant", "--user", user.id, "--count", "1")).exitCode).toBe(0);

    const shown = await run("resets", "show", "--user", "gifted@example.test");
    expect(shown.exitCode).toBe(0);
    expect(shown.stdout).toContain("1 of 1 left");
    expect(shown.stdout).toContain("gifted 3 (2 until 2100-01-01T00:00:00.000Z, 1 until never)");

    const moved = await run("users", "set-plan", "--user", "gifted@example.test", "--plan", "pro", "--json");
    expect(moved.exitCode).toBe(0);
    expect(JSON.parse(moved.stdout)).toMatchObject({ id: user.id, plan: "pro" });
    expect(JSON.parse((await run("resets", "show", "--user", user.id, "--json")).stdout)).toMatchObject({
      plan: "pro",
      weekly_allowance: 3,
      weekly_left: 3,
    });

    for (const args of [
      ["resets", "grant", "--user", "gifted@example.test", "--count", "0"],
      ["resets", "grant", "--user", "gifted@example.test", "--count", "1.5"],
      ["resets", "grant", "--user", "gifted@example.test", "--count", "1", "--expires", "2020-01-01"],
      ["resets", "grant", "--user", "gifted@example.test", "--count", "1", "--expires", "soon"],
      ["resets", "grant", "--user", "nobody@example.test", "--count", "1"],
      ["resets", "show", "--user", "nobody@example.test"],
      ["users", "set-plan", "--user", "gifted@example.test", "--plan", "platinum"],
      ["users", "set-plan", "--user", "nobody@example.test", "--plan", "pro"],
    ]) {
      const refused = await run(...args);
      expect(refused.exitCode, args.join(" ")).toBe(1);
      expect(errorLines(refused.stderr), args.join(" ")).toHaveLength(1);
    }
    const { rows } = await db.pool.query("select count(*)::int as n from quota_reset_grants");
    expect(rows[0].n).toBe(2);
  }, 120_000);
});
