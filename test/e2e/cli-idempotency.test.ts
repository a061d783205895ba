import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { reconcileLedger } from "../../src/quota/index.js";
import { errorLines, gateway, tempDir } from "../helpers/cli.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

// `gateway reseller credit` and `gateway resets grant` with --idempotency-key, against a real database (docs/cli.md,
// "Idempotency keys"): a command that made its own key prints it first, and a rerun with it applies nothing again.
describe("money commands and their idempotency keys", () => {
  let work: Awaited<ReturnType<typeof tempDir>>;
  let db: TestDatabase;
  let config: string;
  let userId: string;
  const run = (...args: string[]) => gateway([...args, "--config", config], { cwd: work.dir, env: { DATABASE_URL: db.url } });
  const count = async (table: string) =>
    (await db.pool.query<{ n: number }>(`select count(*)::int as n from ${table} where user_id = $1::uuid`, [userId])).rows[0]!.n;

  beforeAll(async () => {
    work = await tempDir("gateway-e2e-idempotency-");
    db = await createTestDatabase();
    config = path.join(work.dir, "gateway.yaml");
    writeFileSync(
      config,
      [
        "providers:\n  p: { protocol: openai, base_url: 'https://api.example.com/v1' }",
        "models:\n  m: { kind: chat, upstream: m, targets: [p] }",
        "plans:\n  free: { daily_tokens: 1000, weekly_resets: 1, context_limit: 128000 }",
        "",
      ].join("\n"),
    );
    const created = await run("users", "create", "--email", "payee@example.test", "--password", "correct horse battery", "--json");
    expect(created.exitCode).toBe(0);
    userId = (JSON.parse(created.stdout) as { id: string }).id;
  }, 120_000);
  afterAll(async () => {
    await db?.drop();
    await work?.remove();
  });

  it("a credit without a key prints the key it made; rerun with it, it credits once and prints the first balance", async () => {
    const first = await run("reseller", "credit", "--user", "payee@example.test", "--usd", "12.50", "--note", "invoice 9");
    expect(first.exitCode).toBe(0);
    const key = /^gateway: idempotency key: (\S+) \(rerun with --idempotency-key \1 /m.exec(first.stderr)?.[1];
    expect(key).toMatch(/^[0-9a-f-]{36}$/);
    expect(first.stdout).toContain("12.5 USD available (credited 12.5,");
    expect(first.stdout.split("\n").at(-1)).toBe(`idempotency key: ${key}`);

    const rerun = await run(
      "reseller",
      "credit",
      "--user",
      userId,
      "--usd",
      "12.50",
      "--note",
      "invoice 9",
      "--idempotency-key",
      key!,
      "--json",
    );
    expect(rerun.exitCode).toBe(0);
    expect(rerun.stderr).not.toContain("idempotency key:");
    expect(JSON.parse(rerun.stdout)).toEqual({
      user_id: userId,
      credited_usd: "12.5",
      spent_usd: "0",
      reserved_usd: "0",
      available_usd: "12.5",
      idempotency_key: key,
      replayed: true,
    });
    const human = await run("reseller", "credit", "--user", userId, "--usd", "12.5", "--note", "invoice 9", "--idempotency-key", key!);
    expect(human.stdout).toBe(`${first.stdout} (replayed: the first credit with this key; nothing was applied now)`);
    expect(await count("reseller_credits")).toBe(1);

    const other = await run("reseller", "credit", "--user", userId, "--usd", "13", "--idempotency-key", key!);
    expect(other.exitCode).toBe(1);
    expect(errorLines(other.stderr)).toEqual([expect.stringMatching(/^gateway: This idempotency key was used for a credit/)]);
    expect(await count("reseller_credits")).toBe(1);
    expect(await reconcileLedger(db.pool)).toEqual([]);
  }, 120_000);

  it("a grant with the operator's key: once, whatever the reruns; a malformed key is one error line", async () => {
    const grant = (key: string, ...extra: string[]) =>
      run("resets", "grant", "--user", userId, "--count", "2", "--note", "outage", "--idempotency-key", key, ...extra);
    const first = await grant("ticket-4711", "--json");
    expect(first.exitCode).toBe(0);
    expect(JSON.parse(first.stdout)).toMatchObject({ gifted_left: 2, idempotency_key: "ticket-4711", replayed: false });
    const again = await grant("ticket-4711", "--json");
    expect(JSON.parse(again.stdout)).toEqual({ ...JSON.parse(first.stdout), replayed: true });
    expect(await count("quota_reset_grants")).toBe(1);

    for (const bad of ["", "x".repeat(256), "caf\u00e9"]) {
      const refused = await grant(bad);
      expect(refused.exitCode, bad).toBe(1);
      expect(errorLines(refused.stderr), bad).toEqual([expect.stringContaining("--idempotency-key must be 1 to 255 printable ASCII")]);
    }
    expect(await count("quota_reset_grants")).toBe(1);
    expect(await reconcileLedger(db.pool)).toEqual([]);
  }, 120_000);
});
