import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanEnv, gateway, gatewayBin, startServe, tempDir, type ServeProcess } from "../helpers/cli.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

// Issue 19's operator habits, through the built binary: admin commands without provider secrets, which database
// a command acts on, no silent new embedded database, --version and suggestions, passwords off the command line,
// disabling and deleting users, and the demo on an external database with a fresh data dir.
describe("gateway operator habits", () => {
  let work: Awaited<ReturnType<typeof tempDir>>;
  let db: TestDatabase;
  let configFile: string;
  const env = () => ({ DATABASE_URL: db.url });
  const run = (args: string[], extra: Record<string, string> = {}) => gateway(args, { cwd: work.dir, env: { ...env(), ...extra } });
  const lastLine = (text: string) => text.trim().split("\n").at(-1);
  const running: ServeProcess[] = [];

  beforeAll(async () => {
    work = await tempDir("gateway-e2e-operator-");
    db = await createTestDatabase({ migrate: false });
    configFile = path.join(work.dir, "gateway.yaml");
    writeFileSync(
      configFile,
      [
        "providers:",
        "  main: { protocol: openai, base_url: 'https://api.example.com/v1', api_key: '${MAIN_API_KEY}' }",
        "  backup: { protocol: anthropic, base_url: 'https://api.example.org', api_key: '${BACKUP_API_KEY}' }",
        "models:",
        "  m1: { kind: chat, upstream: m1, targets: [main, backup] }",
        "plans:",
        "  free: { daily_tokens: 1000, weekly_resets: 1, context_limit: 8000 }",
        "",
      ].join("\n"),
    );
  });
  afterAll(async () => {
    for (const s of running) if (s.proc.exitCode === null) s.proc.kill("SIGKILL");
    await db?.drop();
    await work?.remove();
  });

  it("prints its version and suggests the closest command on one line", async () => {
    const version = await run(["--version"]);
    expect(version.exitCode).toBe(0);
    const pkg = JSON.parse(readFileSync(path.resolve("package.json"), "utf8")) as { version: string };
    expect(version.stdout).toBe(pkg.version);

    const typo = await run(["usres"]);
    expect(typo.exitCode).not.toBe(0);
    expect(typo.stderr).toBe("error: unknown command 'usres' (did you mean users?)");
    const subTypo = await run(["users", "disabel"]);
    expect(subTypo.stderr).toBe("error: unknown command 'disabel' (did you mean disable?)");
  });

  it("runs admin commands without provider secrets; config check lists every unset variable", async () => {
    const migrated = await run(["migrate"]);
    expect(migrated.exitCode, migrated.stderr).toBe(0);
    const dbUrl = new URL(db.url);
    expect(migrated.stderr).toContain(`gateway: database: external PostgreSQL postgres://${dbUrl.username}@${dbUrl.host}${dbUrl.pathname}`);
    if (dbUrl.password) expect(migrated.stderr).not.toContain(dbUrl.password);

    const created = await execa(
      gatewayBin,
      ["users", "create", "--email", "ops@example.test", "--password-stdin", "--role", "admin", "--json"],
      {
        cwd: work.dir,
        env: cleanEnv(env()),
        extendEnv: true,
        reject: false,
        input: "correct horse battery\n",
      },
    );
    expect(created.exitCode, created.stderr).toBe(0);
    expect(JSON.parse(created.stdout)).toMatchObject({ email: "ops@example.test", role: "admin", disabled_at: null });
    const { rows } = await db.pool.query<{ ok: boolean }>("select password_hash <> '' as ok from users where email = 'ops@example.test'");
    expect(rows).toEqual([{ ok: true }]);

    const noPassword = await run(["users", "create", "--email", "x@example.test"]);
    expect(noPassword.exitCode).toBe(1);
    expect(lastLine(noPassword.stderr)).toMatch(/no password: pipe it with --password-stdin/);

    const serve = await run(["serve", "--port", "0"]);
    expect(serve.exitCode).toBe(2);
    expect(serve.stderr).toMatch(
      /environment variable MAIN_API_KEY is not set; also unset: BACKUP_API_KEY \(at providers\.backup\.api_key\)/,
    );

    const check = await run(["config", "check"]);
    expect(check.exitCode).toBe(2);
    expect(check.stderr.trim().split("\n")).toEqual([
      `gateway: invalid config ${configFile} at providers.main.api_key: environment variable MAIN_API_KEY is not set`,
      `gateway: invalid config ${configFile} at providers.backup.api_key: environment variable BACKUP_API_KEY is not set`,
    ]);
    const checkJson = await run(["config", "check", "--json"], { MAIN_API_KEY: "sk-1" });
    expect(checkJson.exitCode).toBe(2);
    expect(JSON.parse(checkJson.stdout)).toEqual({
      file: configFile,
      valid: false,
      findings: [{ level: "error", path: "providers.backup.api_key", message: "environment variable BACKUP_API_KEY is not set" }],
      config: null,
    });
    expect((await run(["config", "check"], { MAIN_API_KEY: "sk-1", BACKUP_API_KEY: "sk-2" })).exitCode).toBe(0);
  });

  it("lists keys with their owner's email and last use; disables, enables and deletes users", async () => {
    const key = JSON.parse((await run(["keys", "create", "--user", "ops@example.test", "--json"])).stdout) as { id: string };
    await db.pool.query("update api_keys set last_used_at = '2030-01-02T03:04:05Z' where id = $1", [key.id]);
    const table = await run(["keys", "list"]);
    expect(table.stdout).toMatch(/USER_EMAIL .* LAST_USED_AT/);
    expect(table.stdout).toContain("ops@example.test");
    expect(table.stdout).toContain("2030-01-02T03:04:05.000Z");
    const listed = JSON.parse((await run(["keys", "list", "--json"])).stdout) as { user_email: string; last_used_at: string }[];
    expect(listed).toMatchObject([{ user_email: "ops@example.test", last_used_at: "2030-01-02T03:04:05.000Z" }]);

    const refused = await run(["users", "delete", "ops@example.test"]);
    expect(refused.exitCode).toBe(1);
    expect(lastLine(refused.stderr)).toBe(
      "gateway: user ops@example.test is not disabled; run `gateway users disable ops@example.test` first",
    );

    const disabled = await run(["users", "disable", "OPS@example.test", "--json"]);
    expect(disabled.exitCode, disabled.stderr).toBe(0);
    expect(JSON.parse(disabled.stdout).disabled_at).toEqual(expect.any(String));
    const users = await run(["users", "list"]);
    expect(users.stdout).toMatch(/DISABLED_AT/);
    expect((await run(["users", "enable", "ops@example.test"])).stdout).toMatch(/^enabled admin ops@example.test/);
    expect((await run(["users", "disable", "ops@example.test"])).stdout).toMatch(/^disabled admin ops@example.test/);
    expect((await run(["users", "delete", "ops@example.test"])).stdout).toMatch(/^deleted admin ops@example.test/);
    const gone = await db.pool.query("select (select count(*) from users)::int as users, (select count(*) from api_keys)::int as keys");
    expect(gone.rows).toEqual([{ users: 0, keys: 0 }]);
    const unknown = await run(["users", "disable", "nobody@example.test"]);
    expect(unknown.exitCode).toBe(1);
    expect(lastLine(unknown.stderr)).toBe("gateway: no user nobody@example.test");
  });

  it("refuses to create an embedded database from an admin command without --init", async () => {
    const dataDir = path.join(work.dir, "elsewhere");
    const result = await gateway(["users", "list", "--data-dir", dataDir], { cwd: work.dir });
    expect(result.exitCode).toBe(1);
    expect(result.stderr.trim()).toBe(
      `gateway: embedded PostgreSQL: no database in ${dataDir}/pg: run the command where the gateway's data dir is, pass --data-dir or set DATABASE_URL; --init creates a new, empty one there`,
    );
    expect(existsSync(dataDir)).toBe(false);
  });

  it("serves the demo on the config its command line names, and says which", async () => {
    const demoDb = await createTestDatabase();
    try {
      const named = path.join(work.dir, "named.yaml");
      writeFileSync(
        named,
        [
          "providers:",
          "  local: { protocol: openai, base_url: 'http://127.0.0.1:9/v1', api_key: 'k' }",
          "models:",
          "  named-model: { kind: chat, upstream: u, targets: [local] }",
          "plans:",
          "  free: { daily_tokens: 1000, context_limit: 8000 }",
          "default_plan: free",
          "",
        ].join("\n"),
      );
      const serve = startServe(["--demo", "--config", named, "--port", "0", "--data-dir", path.join(work.dir, "named-demo")], {
        cwd: work.dir,
        env: { DATABASE_URL: demoDb.url },
      });
      running.push(serve);
      const [, url] = await serve.waitFor(/ready at (http:\/\/\S+)/);
      const [, key] = await serve.waitFor(/API key:\s+(\S+)/);
      expect((await serve.waitFor(/config:\s+(.+)/))[1]).toBe(named);
      const models = (await (await fetch(`${url}/v1/models`, { headers: { Authorization: `Bearer ${key}` } })).json()) as {
        data: { id: string }[];
      };
      expect(models.data.map((m) => m.id)).toEqual(["named-model"]);
      serve.proc.kill("SIGTERM");
      expect((await serve.proc).exitCode).toBe(0);
    } finally {
      await demoDb.drop();
    }
  }, 120_000);

  it("serves the demo on DATABASE_URL with a data dir that does not exist yet", async () => {
    const demoDb = await createTestDatabase();
    try {
      const dataDir = path.join(work.dir, "fresh-demo-data");
      // In work.dir, beside the operator's gateway.yaml (whose provider secrets this shell lacks): the demo runs
      // its own config all the same, and says so.
      const serve = startServe(["--demo", "--port", "0", "--data-dir", dataDir], {
        cwd: work.dir,
        env: { DATABASE_URL: demoDb.url, GATEWAY_CONFIG: configFile },
      });
      running.push(serve);
      const [, url] = await serve.waitFor(/ready at (http:\/\/\S+)/);
      const [, key] = await serve.waitFor(/API key:\s+(\S+)/);
      expect((await serve.waitFor(/config:\s+(.+)/))[1]).toMatch(
        /^the built-in demo config \(its models on the mock upstream at http:\/\/127\.0\.0\.1:\d+\)$/,
      );
      const models = (await (await fetch(`${url}/v1/models`, { headers: { Authorization: `Bearer ${key}` } })).json()) as {
        data: { id: string }[];
      };
      expect(models.data.map((m) => m.id)).toContain("demo-small");
      expect(models.data.map((m) => m.id)).not.toContain("m1");
      const saved = JSON.parse(readFileSync(path.join(dataDir, "demo-credentials.json"), "utf8")) as { key: string; url: string };
      expect(saved).toMatchObject({ key, url });
      expect((await fetch(`${url}/v1/models`, { headers: { Authorization: `Bearer ${key}` } })).status).toBe(200);
      serve.proc.kill("SIGTERM");
      expect((await serve.proc).exitCode).toBe(0);
    } finally {
      await demoDb.drop();
    }
  }, 120_000);
});
