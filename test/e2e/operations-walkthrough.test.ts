import { existsSync, readFileSync } from "node:fs";
import { cp, symlink, writeFile } from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { cleanEnv, processesMentioning, startServe, tempDir, type ServeProcess } from "../helpers/cli.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { postLogin } from "../helpers/login.js";

// docs/operations.md run as written, in its order, on a copy of the repository (the "clone"; the dependencies
// are this checkout's, linked: no network install): install (npm's own `prepare` step builds the CLI), the demo
// on an external and on the embedded database, a provider at a closed port seen failing in the log, a user
// whose password comes on stdin. The config is the YAML of the doc itself, so the two cannot drift apart.

const repo = path.resolve(".");
const doc = readFileSync(path.join(repo, "docs/operations.md"), "utf8");
const PROVIDER_KEY = "sk-walkthrough-provider-key";

/** The first ```yaml block of the doc. */
function docYaml(): string {
  const match = /```yaml\n([\s\S]*?)```/.exec(doc);
  if (!match) throw new Error("docs/operations.md has no yaml block");
  return match[1]!;
}

/** What a clone holds: the tracked tree, without what install, build and runs add. */
const NOT_IN_A_CLONE = new Set(["node_modules", "dist", ".gateway", ".git", "coverage"]);

describe("the operator's first day (docs/operations.md)", () => {
  let clone: Awaited<ReturnType<typeof tempDir>>;
  let db: TestDatabase | undefined;
  let configured: { serve: ServeProcess; url: string } | undefined;
  const running: ServeProcess[] = [];
  const bin = () => path.join(clone.dir, "bin/gateway");
  const run = (args: string[], extra: { env?: Record<string, string>; input?: string } = {}) =>
    execa(bin(), args, {
      cwd: clone.dir,
      env: cleanEnv(extra.env),
      extendEnv: true,
      reject: false,
      timeout: 120_000,
      input: extra.input,
    });
  const serve = (args: string[], env?: Record<string, string>) => {
    const s = startServe(args, { cwd: clone.dir, env, bin: bin() });
    running.push(s);
    return s;
  };

  beforeAll(async () => {
    clone = await tempDir("gateway-e2e-walkthrough-");
    await cp(repo, clone.dir, { recursive: true, filter: (src) => !NOT_IN_A_CLONE.has(path.basename(src)) });
    await symlink(path.join(repo, "node_modules"), path.join(clone.dir, "node_modules"));
  });

  afterAll(async () => {
    for (const s of running) if (s.proc.exitCode === null) s.proc.kill("SIGKILL");
    if (clone) {
      for (const pid of processesMentioning(clone.dir)) process.kill(pid, "SIGKILL");
      await clone.remove();
    }
    await db?.drop();
  });

  async function stop(s: ServeProcess) {
    s.proc.kill("SIGTERM");
    const result = await s.proc;
    expect(result.exitCode, s.stderr()).toBe(0);
  }

  async function demoAnswers(s: ServeProcess) {
    const [, url] = await s.waitFor(/ready at (http:\/\/\S+)/);
    const [, key] = await s.waitFor(/API key:\s+(\S+)/);
    const res = await fetch(`${url}/v1/models`, { headers: { Authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
  }

  it("1-2. install builds the CLI; bin/gateway runs; npx gateway is the package's own bin", async () => {
    // `npm install` runs the root package's `prepare` after fetching the dependencies; they are linked here.
    const installed = await execa("npm", ["run", "prepare"], { cwd: clone.dir, reject: false, timeout: 300_000 });
    expect(installed.exitCode, installed.stderr).toBe(0);
    expect(existsSync(path.join(clone.dir, "dist/cli/index.js"))).toBe(true);
    const help = await run(["--help"]);
    expect(help.exitCode, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/serve/);
    const pkg = JSON.parse(readFileSync(path.join(clone.dir, "package.json"), "utf8")) as { bin: Record<string, string> };
    expect(pkg.bin).toEqual({ gateway: "bin/gateway" });
  }, 300_000);

  // On a fresh clone the data dir does not exist yet: the demo creates it for its credentials (issue 19 item 1).
  it("3. the demo on an external database, on a fresh clone (an empty database is enough)", async () => {
    db = await createTestDatabase({ migrate: false });
    const s = serve(["--demo", "--port", "0"], { DATABASE_URL: db.url });
    await demoAnswers(s);
    await stop(s);
    expect(existsSync(path.join(clone.dir, ".gateway/demo-credentials.json"))).toBe(true);
    expect(existsSync(path.join(clone.dir, ".gateway/pg"))).toBe(false);
  }, 180_000);

  it("3. the demo on the embedded database", async () => {
    const s = serve(["--demo", "--port", "0"]);
    await demoAnswers(s);
    await stop(s);
    expect(existsSync(path.join(clone.dir, ".gateway/pg"))).toBe(true);
  }, 180_000);

  it("4. a provider at a closed port: the client gets 502, the log says which provider, where and why", async () => {
    await writeFile(path.join(clone.dir, "gateway.yaml"), docYaml());
    const env = { OPENAI_API_KEY: PROVIDER_KEY };
    const checked = await run(["config", "check"], { env });
    expect(checked.exitCode, checked.stderr).toBe(0);
    expect(checked.stdout).not.toContain(PROVIDER_KEY);

    const s = serve(["--port", "0"], env);
    const [, url] = await s.waitFor(/gateway listening on (http:\/\/\S+)/);
    configured = { serve: s, url: url! };
    const created = await run(["keys", "create", "--user", "demo@example.com"], { env });
    expect(created.exitCode, created.stderr).toBe(0);
    const key = created.stdout.trim();

    const res = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(res.status).toBe(502);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("upstream_unreachable");
    const requestId = res.headers.get("x-request-id")!;

    // The log line is written beside the answer, not before it: on a loaded machine it can trail the response.
    await vi.waitFor(() => expect(s.stdout()).toContain("UPSTREAM_ATTEMPT_FAILED"), { timeout: 30_000, interval: 50 });
    const lines = s
      .stdout()
      .split("\n")
      .filter((l) => l.includes("UPSTREAM_"))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        msg: "UPSTREAM_ATTEMPT_FAILED",
        req_id: requestId,
        provider: "openai",
        upstream_host: "127.0.0.1:9",
        model: "gpt-4o-mini",
        upstream_model: "gpt-4o-mini-2024-07-18",
        attempt: 1,
        failure: "connect",
        upstream_status: null,
        error_class: "connection_refused",
        fallback: false,
      }),
    ]);
    expect(s.stdout()).not.toContain(PROVIDER_KEY);
  }, 180_000);

  it("5. a user whose password comes on stdin, who can then log in", async () => {
    expect(configured, "step 4 leaves the configured gateway running").toBeDefined();
    const password = "a-long-password";
    const created = await run(["users", "create", "--email", "ops@example.com", "--password-stdin"], {
      env: { OPENAI_API_KEY: PROVIDER_KEY },
      input: `${password}\n`,
    });
    expect(created.exitCode, created.stderr).toBe(0);
    const login = await postLogin(configured!.url, "ops@example.com", password);
    expect(login.status).toBe(200);
    await stop(configured!.serve);
  }, 120_000);
});
