import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { errorLines, gateway, processesMentioning, tempDir } from "../helpers/cli.js";
import { createTestDatabase } from "../helpers/db.js";

// Admin commands on a data dir with no running gateway: each starts the embedded database briefly.
describe("gateway admin commands", () => {
  let work: Awaited<ReturnType<typeof tempDir>>;
  let dataDir: string;
  const run = (...args: string[]) => gateway([...args, "--data-dir", dataDir], { cwd: work.dir });

  beforeAll(async () => {
    work = await tempDir("gateway-e2e-cli-");
    dataDir = path.join(work.dir, "data");
  });
  afterAll(async () => {
    for (const pid of processesMentioning(work.dir)) process.kill(pid, "SIGKILL");
    await work.remove();
  });

  it("creates users and keys, prints JSON, refuses duplicates with one line, and stops its database", async () => {
    const refused = await run("users", "list");
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toMatch(/no database in .*--init creates a new, empty one there/);
    // --init: this fresh data dir is meant; the commands after it use the database it created.
    const created = await run(
      "users",
      "create",
      "--email",
      "Ops@Example.com",
      "--password",
      "correct horse",
      "--role",
      "admin",
      "--json",
      "--init",
    );
    expect(created.exitCode).toBe(0);
    expect(created.stderr).toContain(`gateway: database: embedded PostgreSQL in ${dataDir}/pg (started for this command)`);
    const user = JSON.parse(created.stdout) as Record<string, unknown>;
    // Stored normalised (docs/auth.md, "E-mail addresses").
    expect(user).toMatchObject({ email: "ops@example.com", role: "admin", plan: "free" });
    expect(user.id).toEqual(expect.any(String));

    const duplicate = await run("users", "create", "--email", "ops@example.com", "--password", "another pass");
    expect(duplicate.exitCode).not.toBe(0);
    expect(errorLines(duplicate.stderr)).toHaveLength(1);
    expect(duplicate.stderr).toMatch(/already exists/);

    const key = await run("keys", "create", "--user", "ops@example.com", "--kind", "reseller", "--models", "demo-small", "--json");
    expect(key.exitCode).toBe(0);
    const parsed = JSON.parse(key.stdout) as { id: string; key: string; prefix: string; kind: string; user_id: string };
    expect(parsed).toMatchObject({ kind: "reseller", user_id: user.id, models: ["demo-small"] });
    expect(parsed.key.startsWith(parsed.prefix)).toBe(true);

    const listed = JSON.parse((await run("keys", "list", "--json")).stdout) as { id: string; key?: string }[];
    expect(listed.map((k) => k.id)).toEqual([parsed.id]);
    expect(JSON.stringify(listed)).not.toContain(parsed.key);

    const revoked = await run("keys", "revoke", parsed.id, "--json");
    expect(JSON.parse(revoked.stdout).revoked_at).toEqual(expect.any(String));
    const unknown = await run("keys", "revoke", "00000000-0000-0000-0000-000000000000");
    expect(unknown.exitCode).toBe(1);
    expect(errorLines(unknown.stderr)).toHaveLength(1);

    const badModel = await run("keys", "create", "--user", "ops@example.com", "--models", "no-such-model");
    expect(badModel.exitCode).toBe(1);

    const credited = await run("reseller", "credit", "--user", "ops@example.com", "--usd", "25.50", "--note", "first top-up", "--json");
    expect(credited.exitCode).toBe(0);
    expect(JSON.parse(credited.stdout)).toEqual({
      user_id: user.id,
      credited_usd: "25.5",
      spent_usd: "0",
      reserved_usd: "0",
      available_usd: "25.5",
      idempotency_key: expect.stringMatching(/^[0-9a-f-]{36}$/),
      replayed: false,
    });
    await run("reseller", "credit", "--user", user.id as string, "--usd", "0.000000001");
    const balance = await run("reseller", "balance", "--user", "ops@example.com");
    expect(balance.stdout).toContain("25.500000001 USD available");
    const badAmount = await run("reseller", "credit", "--user", "ops@example.com", "--usd", "-5");
    expect(badAmount.exitCode).toBe(1);
    expect(errorLines(badAmount.stderr)).toHaveLength(1);
    expect(badAmount.stderr).toMatch(/usd must be a positive decimal/);

    const users = JSON.parse((await run("users", "list", "--json")).stdout) as unknown[];
    expect(users).toHaveLength(1);
    expect(processesMentioning(dataDir)).toEqual([]);
  }, 120_000);

  it("validates config files: exit 2 naming the field, masked secrets when valid", async () => {
    const bad = path.join(work.dir, "bad.yaml");
    writeFileSync(bad, "providers:\n  p: { protocol: openai, base_url: not-a-url }\n");
    const invalid = await gateway(["config", "check", "--config", bad], { cwd: work.dir });
    expect(invalid.exitCode).toBe(2);
    expect(invalid.stderr).toMatch(/providers\.p\.base_url/);
    expect(invalid.stderr.trim().split("\n")).toHaveLength(1);

    const serveInvalid = await gateway(["serve", "--config", bad, "--data-dir", dataDir], { cwd: work.dir });
    expect(serveInvalid.exitCode).toBe(2);

    const good = path.join(work.dir, "good.yaml");
    writeFileSync(
      good,
      "providers:\n  p: { protocol: openai, base_url: 'https://api.example.com/v1', api_key: '${P_KEY}' }\nmodels:\n  m: { kind: chat, upstream: m, targets: [p] }\n",
    );
    const valid = await gateway(["config", "check", "--config", good, "--json"], { cwd: work.dir, env: { P_KEY: "sk-very-secret" } });
    expect(valid.exitCode).toBe(0);
    expect(valid.stdout).not.toContain("sk-very-secret");
    expect(JSON.parse(valid.stdout)).toMatchObject({ valid: true, findings: [], config: { providers: { p: { api_key: "****" } } } });

    const usage = await gateway(["keys", "create"], { cwd: work.dir });
    expect(usage.exitCode).not.toBe(0);
    expect(usage.stderr.trim().split("\n")).toHaveLength(1);
  }, 60_000);

  it("migrate --json brings a fresh database up, graphile-worker's schema included, and prints only {ok: true}", async () => {
    const db = await createTestDatabase({ migrate: false });
    try {
      for (let i = 0; i < 2; i++) {
        const migrated = await gateway(["migrate", "--json"], { cwd: work.dir, env: { DATABASE_URL: db.url } });
        expect(migrated.exitCode).toBe(0);
        expect(migrated.stdout).toBe('{\n  "ok": true\n}');
        expect(migrated.stderr).toMatch(/^gateway: database: external PostgreSQL postgres:\/\/\S+ \(DATABASE_URL\)$/);
      }
      const { rows } = await db.pool.query("select (graphile_worker.add_job('prune_auth', '{}'::json)).id is not null as queued");
      expect(rows).toEqual([{ queued: true }]);
    } finally {
      await db.drop();
    }
  }, 60_000);

  it("an admin command on a fresh database leaves graphile-worker's schema ready for jobs too", async () => {
    const db = await createTestDatabase({ migrate: false });
    try {
      const created = await gateway(["users", "create", "--email", "first@example.test", "--password", "correct horse", "--json"], {
        cwd: work.dir,
        env: { DATABASE_URL: db.url },
      });
      expect(created.exitCode).toBe(0);
      const { rows } = await db.pool.query("select (graphile_worker.add_job('prune_auth', '{}'::json)).id is not null as queued");
      expect(rows).toEqual([{ queued: true }]);
    } finally {
      await db.drop();
    }
  }, 60_000);
});
