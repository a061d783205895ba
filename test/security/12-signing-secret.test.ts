import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadJwtSecret } from "../../src/auth/jwt-secret.js";
import { tempDir } from "../helpers/cli.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestGateway, testConfig, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";

// Issue 20, item 12: the session signing secret can come from a file or the environment instead of the
// database, and a rotation can keep the previous secret's sessions valid.

const USER = { email: "secret@example.test", password: "secret-password-12" };
const SECRET_A = "a".repeat(40);
const SECRET_B = "b".repeat(40);

let work: Awaited<ReturnType<typeof tempDir>>;
let db: TestDatabase;
const fileA = () => path.join(work.dir, "a.secret");
const fileB = () => path.join(work.dir, "b.secret");

beforeAll(async () => {
  work = await tempDir("gateway-security-12-");
  writeFileSync(fileA(), `${SECRET_A}\n`);
  writeFileSync(fileB(), SECRET_B);
  writeFileSync(path.join(work.dir, "short.secret"), "too-short\n");
  db = await createTestDatabase();
  const gw = await startTestGateway({ db });
  await gw.services.auth.users.create(USER);
  await gw.close();
});

afterAll(async () => {
  await db?.drop();
  await work?.remove();
});

async function session(gw: TestGateway) {
  const { token, csrfToken } = await logIn(gw.url, USER.email, USER.password);
  return { token, csrf: csrfToken };
}

const me = (gw: TestGateway, token: string) => fetch(`${gw.url}/api/v1/user/me`, { headers: { authorization: `Bearer ${token}` } });
async function withGateway<T>(opts: Parameters<typeof startTestGateway>[0], fn: (gw: TestGateway) => Promise<T>): Promise<T> {
  const gw = await startTestGateway({ db, ...opts });
  try {
    return await fn(gw);
  } finally {
    await gw.close();
  }
}

const storedSecrets = async () => (await db.pool.query("select name from gateway_secrets")).rowCount;

describe("the signing secret", () => {
  it("comes from auth.jwt_secret_file, not the database, and signs what the same file verifies", async () => {
    await db.pool.query("delete from gateway_secrets");
    const s = await withGateway({ config: { auth: { jwt_secret_file: fileA() } } }, session);
    expect(await storedSecrets()).toBe(0);
    // Another process with the same file accepts it; one with another secret does not.
    await withGateway({ config: { auth: { jwt_secret_file: fileA() } } }, async (gw) => expect((await me(gw, s.token)).status).toBe(200));
    await withGateway({ env: { GATEWAY_JWT_SECRET: SECRET_B } }, async (gw) => expect((await me(gw, s.token)).status).toBe(401));
    expect(await storedSecrets()).toBe(0);
  });

  it("the file wins over GATEWAY_JWT_SECRET; without either the database keeps one", async () => {
    const s = await withGateway({ config: { auth: { jwt_secret_file: fileB() } }, env: { GATEWAY_JWT_SECRET: SECRET_A } }, session);
    await withGateway({ env: { GATEWAY_JWT_SECRET: SECRET_B } }, async (gw) => expect((await me(gw, s.token)).status).toBe(200));
    await withGateway({}, session);
    expect(await storedSecrets()).toBe(1);
  });

  it("refuses to start, in one line, on an unreadable or short file", async () => {
    const missing = path.join(work.dir, "missing.secret");
    await expect(startTestGateway({ db, config: { auth: { jwt_secret_file: missing } } })).rejects.toThrow(
      `auth.jwt_secret_file ${missing}: cannot read it (ENOENT)`,
    );
    const short = path.join(work.dir, "short.secret");
    await expect(startTestGateway({ db, config: { auth: { jwt_secret_file: short } } })).rejects.toThrow(
      `auth.jwt_secret_file ${short}: the secret must be at least 32 characters long (it has 9)`,
    );
    await expect(
      startTestGateway({ db, config: { auth: { jwt_secret_file: fileA(), jwt_previous_secret_file: missing } } }),
    ).rejects.toThrow(`auth.jwt_previous_secret_file ${missing}: cannot read it (ENOENT)`);
  });

  it("during a rotation, sessions of the previous secret keep working, CSRF included; new ones use the new secret", async () => {
    const old = await withGateway({ config: { auth: { jwt_secret_file: fileA() } } }, session);
    const rotated = { config: { auth: { jwt_secret_file: fileB(), jwt_previous_secret_file: fileA() } } };
    const fresh = await withGateway(rotated, async (gw) => {
      expect((await me(gw, old.token)).status).toBe(200);
      // Admin state changes check the CSRF token the previous secret gave at login.
      const sid = (JSON.parse(Buffer.from(old.token.split(".")[1]!, "base64url").toString()) as { sid: string }).sid;
      expect(gw.services.auth.sessions.csrfMatches(sid, old.csrf)).toBe(true);
      expect(gw.services.auth.sessions.csrfMatches(sid, "x".repeat(43))).toBe(false);
      return session(gw);
    });
    // Once the previous secret is dropped, its sessions end; the new ones stay.
    await withGateway({ config: { auth: { jwt_secret_file: fileB() } } }, async (gw) => {
      expect((await me(gw, old.token)).status).toBe(401);
      expect((await me(gw, fresh.token)).status).toBe(200);
    });
  });

  it("processes starting together read the first writer's secret, also when its insert commits while theirs waits", async () => {
    await db.pool.query("delete from gateway_secrets");
    const first = await db.pool.connect();
    try {
      await first.query("begin");
      await first.query("insert into gateway_secrets (name, value) values ('session_signing_key', $1)", [
        Buffer.from(SECRET_A).toString("base64url"),
      ]);
      // This one's insert waits on the uncommitted row; its statement's snapshot then predates that row.
      const waiting = loadJwtSecret({ config: testConfig(), env: {}, pool: db.pool });
      await new Promise((resolve) => setTimeout(resolve, 200));
      await first.query("commit");
      expect(Buffer.from(await waiting).toString("utf8")).toBe(SECRET_A);
    } finally {
      first.release();
    }
  });
});
