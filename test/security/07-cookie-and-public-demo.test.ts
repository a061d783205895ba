import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { errorLines, gateway, processesMentioning, startServe, tempDir, type ServeProcess } from "../helpers/cli.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import type { ConfigInput } from "../../src/config/schema.js";
import { startTestGateway } from "../helpers/gateway-app.js";
import { postLogin } from "../helpers/login.js";

// Issue 20, item 7: the session cookie is Secure unless the server listens on loopback or the operator turns it
// off, and the demo does not serve its admin user to other machines unless asked.

const USER = { email: "cookie@example.test", password: "cookie-password-7" };

async function setCookieOf(config: Partial<ConfigInput>): Promise<string> {
  const gw = await startTestGateway({ config });
  try {
    await gw.services.auth.users.create(USER);
    const res = await postLogin(gw.url, USER.email, USER.password);
    expect(res.status).toBe(200);
    return res.headers.get("set-cookie") ?? "";
  } finally {
    await gw.close();
  }
}

describe("the session cookie", () => {
  it("is Secure by default when the server listens on other than loopback", async () => {
    expect(await setCookieOf({ server: { host: "0.0.0.0" } })).toMatch(/^gw_session=.*; Secure/);
  });

  it("is not Secure by default on loopback", async () => {
    const cookie = await setCookieOf({ server: { host: "127.0.0.1" } });
    expect(cookie).toMatch(/^gw_session=/);
    expect(cookie).not.toMatch(/Secure/);
  });

  it("follows an explicit auth.cookie_secure either way", async () => {
    expect(await setCookieOf({ server: { host: "0.0.0.0" }, auth: { cookie_secure: false } })).not.toMatch(/Secure/);
    expect(await setCookieOf({ server: { host: "127.0.0.1" }, auth: { cookie_secure: true } })).toMatch(/; Secure/);
  });
});

describe("serve --demo on a public address", () => {
  const running: ServeProcess[] = [];
  let work: Awaited<ReturnType<typeof tempDir>> | undefined;
  let db: TestDatabase | undefined;

  afterAll(async () => {
    for (const s of running) if (s.proc.exitCode === null) s.proc.kill("SIGKILL");
    if (work) {
      for (const pid of processesMentioning(work.dir)) process.kill(pid, "SIGKILL");
      await work.remove();
    }
    await db?.drop();
  });

  it("is refused with one line and a non-zero exit, before anything starts", async () => {
    work = await tempDir("gateway-security-07-");
    for (const host of ["0.0.0.0", "::", "10.1.2.3"]) {
      const run = await gateway(["serve", "--demo", "--host", host, "--port", "0", "--data-dir", path.join(work.dir, "data")], {
        cwd: work.dir,
      });
      expect(run.exitCode).not.toBe(0);
      const lines = errorLines(run.stderr);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`refusing --demo on ${host}`);
      expect(lines[0]).toContain("--demo-public");
    }
  });

  it("with --demo-public serves, says every interface and warns, and its cookie is Secure", async () => {
    work ??= await tempDir("gateway-security-07-");
    db = await createTestDatabase();
    const serve = startServe(["--demo", "--demo-public", "--host", "0.0.0.0", "--port", "0", "--data-dir", path.join(work.dir, "d2")], {
      cwd: work.dir,
      env: { DATABASE_URL: db.url },
    });
    running.push(serve);
    const [, url] = await serve.waitFor(/ready at (http:\/\/\S+) \(listening on 0\.0\.0\.0: every interface of this machine\)/);
    await serve.waitFor(/warning: other machines can reach this demo/);
    const [, email, password] = await serve.waitFor(/demo user: (\S+) \/ password (\S+)/);
    const res = await postLogin(url!, email!, password!);
    expect(res.status).toBe(200);
    expect(res.headers.get("set-cookie")).toMatch(/; Secure/);
    serve.proc.kill("SIGTERM");
    await serve.proc;
  });
});
