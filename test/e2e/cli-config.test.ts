import { existsSync, readdirSync, writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gateway, processesMentioning, startServe, tempDir, type ServeProcess } from "../helpers/cli.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

// The operator's first config: the examples, what `config check` and `serve` refuse or warn about, the port
// checked before the database, and the log lines a terminal and a collector each get.
describe("gateway config check, serve's config findings, port and logs", () => {
  let work: Awaited<ReturnType<typeof tempDir>>;
  const running: ServeProcess[] = [];
  const write = (name: string, text: string) => {
    const file = path.join(work.dir, name);
    writeFileSync(file, text);
    return file;
  };
  const warnOnly = () =>
    write(
      "warn.yaml",
      [
        "providers:",
        "  main: { protocol: openai, base_url: 'http://127.0.0.1:9/v1', api_key: x }",
        "  spare: { protocol: openai, base_url: 'http://127.0.0.1:9/v1', api_key: x }",
        "models:",
        "  m: { kind: chat, upstream: m, targets: [main] }",
        "",
      ].join("\n"),
    );

  beforeAll(async () => {
    work = await tempDir("gateway-e2e-config-");
  });
  afterAll(async () => {
    for (const s of running) if (s.proc.exitCode === null) s.proc.kill("SIGKILL");
    for (const pid of processesMentioning(work.dir)) process.kill(pid, "SIGKILL");
    await work.remove();
  });

  it("loads every example with its ${ENV} variables set, without a finding", async () => {
    const examples = readdirSync(path.resolve("examples")).filter((f) => f.endsWith(".yaml"));
    expect(examples.sort()).toEqual(["anthropic.yaml", "gemini.yaml", "openai-compatible.yaml", "openai.yaml"]);
    const env = { OPENAI_API_KEY: "sk-1", ANTHROPIC_API_KEY: "sk-ant-1", GEMINI_API_KEY: "AIza1", GROQ_API_KEY: "gsk_1" };
    for (const example of examples) {
      const checked = await gateway(["config", "check", "--config", path.resolve("examples", example), "--json"], { cwd: work.dir, env });
      expect({ example, exitCode: checked.exitCode, stderr: checked.stderr }).toEqual({ example, exitCode: 0, stderr: "" });
      const report = JSON.parse(checked.stdout) as { valid: boolean; findings: unknown[]; config: { providers: Record<string, unknown> } };
      expect({ example, valid: report.valid, findings: report.findings }).toEqual({ example, valid: true, findings: [] });
      expect(Object.keys(report.config.providers).length).toBeGreaterThan(0);
    }
  }, 60_000);

  it("lists errors and warnings with exit 2, and serve refuses the same file before starting anything", async () => {
    const bad = write(
      "bad.yaml",
      [
        "providers:",
        "  claude: { protocol: anthropic, base_url: 'https://api.anthropic.com/v1', api_key: x }",
        "  main: { protocol: openai, base_url: 'https://api.example.com/v1', api_key: x }",
        "  spare: { protocol: openai, base_url: 'https://api.example.com/v1', api_key: x }",
        "models:",
        "  embed: { kind: embedding, upstream: e, targets: [claude] }",
        "  chat: { kind: chat, upstream: c, targets: [main, claude] }",
        "",
      ].join("\n"),
    );
    const text = await gateway(["config", "check", "--config", bad], { cwd: work.dir });
    expect(text.exitCode).toBe(2);
    expect(text.stdout).toBe("");
    expect(text.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^gateway: invalid config \S+bad\.yaml at providers\.claude\.base_url: ends in \/v1/),
      expect.stringMatching(/^gateway: invalid config \S+ at models\.embed\.targets: no route serves kind embedding/),
      expect.stringMatching(/^gateway: warning: config \S+ at providers\.spare: no model uses this provider$/),
    ]);
    const json = await gateway(["config", "check", "--config", bad, "--json"], { cwd: work.dir });
    expect(json.exitCode).toBe(2);
    const report = JSON.parse(json.stdout) as { valid: boolean; config: unknown; findings: { level: string; path: string }[] };
    expect(report).toMatchObject({ valid: false, config: null });
    expect(report.findings.map((f) => [f.level, f.path])).toEqual([
      ["error", "providers.claude.base_url"],
      ["error", "models.embed.targets"],
      ["warning", "providers.spare"],
    ]);

    const dataDir = path.join(work.dir, "refused");
    const serve = await gateway(["serve", "--config", bad, "--data-dir", dataDir], { cwd: work.dir });
    expect(serve.exitCode).toBe(2);
    expect(serve.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(
        /^gateway: invalid config \S+ at providers\.claude\.base_url: .*\(and 1 more: `gateway config check` lists them\)$/,
      ),
    ]);
    expect(existsSync(dataDir)).toBe(false);

    // Schema problems too, every one in the same run, in words: "required", "unknown key", "must be".
    const shapes = write(
      "shapes.yaml",
      [
        "server: { port: eighty }",
        "providers:",
        "  main: { protocol: openai, base_url: 'https://api.example.com/v1', api_key: x, colour: red }",
        "models:",
        "  m: { kind: chat, upstream: m, targets: [main] }",
        "plans:",
        "  free: { daily_tokens: 1000 }",
        "",
      ].join("\n"),
    );
    const listed = await gateway(["config", "check", "--config", shapes], { cwd: work.dir });
    expect(listed.exitCode).toBe(2);
    expect(listed.stderr.trim().split("\n").sort()).toEqual(
      [
        `gateway: invalid config ${shapes} at plans.free.context_limit: required (a number)`,
        `gateway: invalid config ${shapes} at providers.main: unknown key colour`,
        `gateway: invalid config ${shapes} at server.port: must be a number, not a string`,
      ].sort(),
    );

    const empty = await gateway(["config", "check", "--config", write("empty.yaml", "# nothing yet\n")], { cwd: work.dir });
    expect(empty.exitCode).toBe(2);
    expect(empty.stderr).toMatch(/^gateway: invalid config \S+empty\.yaml: the file is empty$/);

    const warned = await gateway(["config", "check", "--config", warnOnly()], { cwd: work.dir });
    expect(warned.exitCode).toBe(0);
    expect(warned.stdout).toMatch(/^# \S+warn\.yaml: valid\n# warning: config \S+ at providers\.spare: no model uses this provider\n/);
  }, 60_000);

  it("finds a port in use before the embedded database is set up: one line, exit 1, no PostgreSQL left", async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
    const port = (holder.address() as net.AddressInfo).port;
    try {
      const dataDir = path.join(work.dir, "busy");
      const serve = await gateway(["serve", "--config", warnOnly(), "--port", String(port), "--data-dir", dataDir], { cwd: work.dir });
      expect(serve.exitCode).toBe(1);
      expect(serve.stderr.trim().split("\n").at(-1)).toBe(`gateway: cannot listen: 127.0.0.1:${port} is already in use`);
      expect(existsSync(path.join(dataDir, "pg"))).toBe(false);
      expect(processesMentioning(dataDir)).toEqual([]);
    } finally {
      holder.close();
    }
  }, 60_000);

  describe("logs", () => {
    let db: TestDatabase;
    beforeAll(async () => {
      db = await createTestDatabase();
    });
    afterAll(async () => {
      await db?.drop();
    });

    async function serveUntilStopped(args: string[]) {
      const serve = startServe(["--config", warnOnly(), "--port", "0", "--data-dir", path.join(work.dir, "logs"), ...args], {
        cwd: work.dir,
        env: { DATABASE_URL: db.url },
      });
      running.push(serve);
      await serve.waitFor(/gateway listening on/);
      serve.proc.kill("SIGTERM");
      const result = await serve.proc;
      expect(result.exitCode).toBe(0);
      return serve.stdout();
    }

    it("prints pretty lines with --log-format pretty, JSON through a pipe, and no warning of its own at a clean stop", async () => {
      const pretty = await serveUntilStopped(["--log-format", "pretty"]);
      expect(pretty).toMatch(/WARN.*config: no model uses this provider/);
      expect(pretty).toMatch(/INFO.*gateway listening/);
      expect(pretty.split("\n").filter((line) => line.startsWith("{"))).toEqual([]);

      const json = (await serveUntilStopped([]))
        .trim()
        .split("\n")
        .map((line) => JSON.parse(line) as { level: number; msg: string; config_path?: string });
      expect(json.find((l) => l.msg === "gateway listening")).toBeDefined();
      // Only the config's own warning: a clean shutdown closes its database connections on purpose.
      expect(json.filter((l) => l.level >= 40)).toEqual([
        expect.objectContaining({ level: 40, config_path: "providers.spare", msg: "config: no model uses this provider" }),
      ]);
    }, 90_000);
  });
});
