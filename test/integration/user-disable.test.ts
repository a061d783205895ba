import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, type Pool } from "../../src/db/pool.js";
import { createServices, type Services } from "../../src/runtime/services.js";
import { createLogger } from "../../src/logger.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestGateway, testConfig, type TestGateway } from "../helpers/gateway-app.js";
import { logIn, postLogin } from "../helpers/login.js";

// `gateway users disable` runs in a process of its own: the serving processes learn of it through the database
// alone. Two serving processes with warm key caches, and the admin command's services (no LISTEN) on a third pool.

const PASSWORD = "password-123";

let db: TestDatabase;
let first: TestGateway;
let second: TestGateway;
let secondPool: Pool;
let adminPool: Pool;
let admin: Services;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const withKey = (target: { url: string }, key: string) => fetch(`${target.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
const me = (target: { url: string }, token: string) =>
  fetch(`${target.url}/api/v1/user/me`, { headers: { authorization: `Bearer ${token}` } });
const login = (target: { url: string }, email: string) => postLogin(target.url, email, PASSWORD);

/** The second process hears of the change by NOTIFY, asynchronously: poll, assert no timing. */
async function keyStatusOnSecond(key: string, want: number): Promise<number> {
  let status = 0;
  for (const deadline = Date.now() + 2_000; Date.now() < deadline; await sleep(20)) {
    status = (await withKey(second, key)).status;
    if (status === want) break;
  }
  return status;
}

beforeAll(async () => {
  db = await createTestDatabase();
  first = await startTestGateway({ db });
  secondPool = createPool(db.url, 4, () => {});
  second = await startTestGateway({ db: { ...db, pool: secondPool } });
  adminPool = createPool(db.url, 2, () => {});
  admin = await createServices({ config: testConfig(), pool: adminPool, logger: createLogger("silent"), env: {}, serving: false });
});

afterAll(async () => {
  await first?.close();
  await second?.close();
  await admin?.close();
  await adminPool?.end();
  await secondPool?.end();
  await db?.drop();
});

describe("disabling a user", () => {
  it("refuses their cached keys in every process, ends their sessions and their logins, and enabling restores the keys", async () => {
    const email = "worker@example.test";
    await admin.auth.users.create({ email, password: PASSWORD });
    const { key } = await admin.auth.apiKeys.create({ user: email });
    const { token } = await logIn(first.url, email, PASSWORD);
    for (const target of [first, second]) expect((await withKey(target, key)).status).toBe(200);
    expect((await me(first, token)).status).toBe(200);

    const disabled = await admin.auth.userAccess.disable(email);
    expect(disabled.disabled_at).toEqual(expect.any(String));
    expect(await keyStatusOnSecond(key, 401)).toBe(401);
    expect((await withKey(first, key)).status).toBe(401);
    expect((await me(second, token)).status).toBe(401);
    const refused = await login(first, email);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("account_disabled");
    const wrongPassword = await postLogin(first.url, email, "not the password");
    expect(wrongPassword.status).toBe(401);

    await admin.auth.userAccess.enable(email);
    expect((await withKey(first, key)).status).toBe(200);
    expect(await keyStatusOnSecond(key, 200)).toBe(200);
    expect((await me(first, token)).status).toBe(401);
    expect((await login(first, email)).status).toBe(200);
  });

  it("deletes only a disabled user, with their keys and sessions", async () => {
    const email = "leaver@example.test";
    const user = await admin.auth.users.create({ email, password: PASSWORD });
    await admin.auth.apiKeys.create({ user: email });
    await expect(admin.auth.userAccess.remove(email)).rejects.toMatchObject({ code: "conflict" });
    await admin.auth.userAccess.disable(user.id);
    expect((await admin.auth.userAccess.remove(email)).id).toBe(user.id);
    const { rows } = await db.pool.query("select count(*)::int as n from api_keys where user_id = $1", [user.id]);
    expect(rows).toEqual([{ n: 0 }]);
    expect(await admin.auth.users.find(email)).toBeNull();
    await expect(admin.auth.userAccess.enable(email)).rejects.toMatchObject({ code: "user_not_found" });
  });
});
