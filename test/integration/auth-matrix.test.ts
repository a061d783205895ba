import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateApiKey } from "../../src/auth/api-key-secret.js";
import { createPool, type Pool } from "../../src/db/pool.js";
import type { Services } from "../../src/runtime/services.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn, postLogin } from "../helpers/login.js";

// Every credential against every route family, over real HTTP against a real database: the table is the
// specification of who may call what (docs/architecture.md, "Rules").

const BOT_TOKEN = "bot-token-for-tests-0123456789abcdefghijkl";
const PASSWORD = "password-123";

let db: TestDatabase;
let server: TestGateway;
let services: Services;
let secondPool: Pool;
let secondServer: TestGateway;
let emailCounter = 0;

const freshEmail = () => `new-${Date.now()}-${++emailCounter}@example.test`;

function call(target: { url: string }, method: string, route: string, headers: Record<string, string> = {}, body?: unknown) {
  if (body === undefined) return fetch(`${target.url}${route}`, { method, headers });
  const json = typeof body === "string" ? body : JSON.stringify(body);
  return fetch(`${target.url}${route}`, { method, headers: { ...headers, "content-type": "application/json" }, body: json });
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

const login = (email: string, password: string) => postLogin(server.url, email, password);

async function session(email: string) {
  const { token, headers } = await logIn(server.url, email, PASSWORD);
  return { token, adminHeaders: headers };
}

/** Checks the error envelope and returns it; `secrets` must not appear anywhere in the body. */
async function expectErrorEnvelope(res: Response, secrets: string[] = []) {
  const text = await res.text();
  for (const secret of secrets) expect(text).not.toContain(secret);
  const body = JSON.parse(text) as { error: Record<string, unknown> };
  expect(Object.keys(body)).toEqual(["error"]);
  expect(Object.keys(body.error).sort()).toEqual(["code", "message", "param", "request_id", "type"]);
  expect(body.error).toMatchObject({ message: expect.any(String), type: expect.any(String) });
  // code and param are always present (keys checked above): a string, or null when they do not apply.
  for (const field of ["code", "param"]) expect(body.error[field] ?? "", field).toEqual(expect.any(String));
  expect(body.error.request_id).toBe(res.headers.get("x-request-id"));
  return body.error;
}

const credentialNames = [
  "none",
  "bearer without token",
  "basic scheme",
  "bearer short key",
  "unknown key",
  "revoked key",
  "inference key",
  "reseller key",
  "user session",
  "admin session without csrf",
  "admin session with csrf",
  "bot token",
] as const;
type CredentialName = (typeof credentialNames)[number];
interface Credential {
  headers: Record<string, string>;
  /** What must never be echoed back in an error body. */
  secret?: string;
}

let credentials: Record<CredentialName, Credential>;

beforeAll(async () => {
  db = await createTestDatabase();
  const options: Parameters<typeof startTestGateway>[0] = {
    config: {
      models: {
        m1: { kind: "chat", upstream: "m1", targets: ["main"] },
        m2: { kind: "chat", upstream: "m2", targets: ["main"] },
      },
    },
    env: { SUPPORT_BOT_TOKEN: BOT_TOKEN },
  };
  server = await startTestGateway({ ...options, db });
  services = server.services;
  // A second gateway process: its own pool, key cache and LISTEN connection on the same database.
  secondPool = createPool(db.url, 4, () => {});
  secondServer = await startTestGateway({ ...options, db: { ...db, pool: secondPool } });

  const { users, apiKeys } = services.auth;
  await users.create({ email: "user@example.test", password: PASSWORD });
  await users.create({ email: "admin@example.test", password: PASSWORD, role: "admin" });
  const inference = await apiKeys.create({ user: "user@example.test" });
  const reseller = await apiKeys.create({ user: "user@example.test", kind: "reseller" });
  const revoked = await apiKeys.create({ user: "user@example.test", name: "to revoke" });
  await apiKeys.revoke(revoked.id);
  const unknown = generateApiKey().key;

  const userLogin = await session("user@example.test");
  const adminLogin = await session("admin@example.test");
  credentials = {
    none: { headers: {} },
    "bearer without token": { headers: { authorization: "Bearer" } },
    "basic scheme": { headers: { authorization: "Basic xyz" }, secret: "xyz" },
    "bearer short key": { headers: { authorization: "Bearer  gw_short" }, secret: "gw_short" },
    "unknown key": { headers: bearer(unknown), secret: unknown },
    "revoked key": { headers: bearer(revoked.key), secret: revoked.key },
    "inference key": { headers: bearer(inference.key), secret: inference.key },
    "reseller key": { headers: bearer(reseller.key), secret: reseller.key },
    "user session": { headers: bearer(userLogin.token), secret: userLogin.token },
    "admin session without csrf": { headers: bearer(adminLogin.token), secret: adminLogin.token },
    "admin session with csrf": { headers: adminLogin.adminHeaders, secret: adminLogin.token },
    "bot token": { headers: bearer(BOT_TOKEN), secret: BOT_TOKEN },
  };
});

afterAll(async () => {
  await server?.close();
  await secondServer?.close();
  await secondPool?.end();
  await db?.drop();
});

interface RouteCase {
  method: "GET" | "POST";
  path: string;
  body?: () => unknown;
  /** Status per credential; any credential not listed expects 401. */
  allowed: Partial<Record<CredentialName, number>>;
}

const keys = { "inference key": 200, "reseller key": 200 } as const;
const admins = (status: number) => ({ "admin session without csrf": status, "admin session with csrf": status });
const routes: RouteCase[] = [
  { method: "GET", path: "/v1/models", allowed: keys },
  { method: "GET", path: "/native/v1/models", allowed: keys },
  // The Anthropic and Gemini routes outside /v1: a key gets as far as the body check (an empty body is a 400).
  ...[
    "/messages",
    "/v1/messages",
    "/compatible/v1beta/models/m1:generateContent",
    "/compatible/v1beta/models/m1:streamGenerateContent?alt=sse",
  ].map((path): RouteCase => ({ method: "POST", path, body: () => ({}), allowed: { "inference key": 400, "reseller key": 400 } })),
  { method: "GET", path: "/api/v1/user/me", allowed: { ...admins(200), "user session": 200 } },
  { method: "GET", path: "/api/v1/admin/users", allowed: { ...admins(200), "user session": 403 } },
  {
    method: "POST",
    path: "/api/v1/admin/users",
    body: () => ({ email: freshEmail(), password: PASSWORD }),
    allowed: { "user session": 403, "admin session without csrf": 403, "admin session with csrf": 201 },
  },
  { method: "GET", path: "/api/v1/internal/ping", allowed: { "bot token": 200 } },
];

describe("auth matrix", () => {
  const cases = routes.flatMap((route) => credentialNames.map((name) => ({ route, name, expected: route.allowed[name] ?? 401 })));

  it.each(cases)("$route.method $route.path with $name → $expected", async ({ route, name, expected }) => {
    const credential = credentials[name];
    const res = await call(server, route.method, route.path, credential.headers, route.body?.());
    expect(res.status).toBe(expected);
    expect(res.headers.get("x-request-id")).toMatch(/^req_/);
    if (expected >= 400) {
      const error = await expectErrorEnvelope(res, credential.secret ? [credential.secret] : []);
      if (expected === 403 && name === "admin session without csrf") expect(error.code).toBe("csrf_failed");
      if (expected === 403 && name === "user session") expect(error.code).toBe("admin_required");
    }
  });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls the second process until it answers 401; the notification is asynchronous, so no timing is asserted. */
async function statusOnSecondWithin2s(key: string): Promise<number> {
  let status = 0;
  for (const deadline = Date.now() + 2_000; Date.now() < deadline; await sleep(20)) {
    status = (await call(secondServer, "GET", "/v1/models", bearer(key))).status;
    if (status === 401) break;
  }
  return status;
}

describe("api keys", () => {
  it("accepts the Anthropic and Gemini SDK headers", async () => {
    const { key } = await services.auth.apiKeys.create({ user: "user@example.test" });
    expect((await call(server, "GET", "/v1/models", { "x-api-key": key })).status).toBe(200);
    expect((await call(server, "GET", "/v1/models", { "x-goog-api-key": key })).status).toBe(200);
    expect((await call(server, "GET", "/v1/models", { authorization: `bearer ${key}` })).status).toBe(200);
  });

  it("does not authorise user endpoints with an API key", async () => {
    const { key } = await services.auth.apiKeys.create({ user: "user@example.test" });
    const res = await call(server, "GET", "/api/v1/user/me", bearer(key));
    expect(res.status).toBe(401);
    const error = await expectErrorEnvelope(res, [key]);
    expect(error.message).toMatch(/API keys do not authorise user endpoints/);
  });

  it("revokes at once although the key was cached", async () => {
    const { id, key } = await services.auth.apiKeys.create({ user: "user@example.test" });
    expect((await call(server, "GET", "/v1/models", bearer(key))).status).toBe(200);
    expect((await call(server, "GET", "/v1/models", bearer(key))).status).toBe(200);
    await services.auth.apiKeys.revoke(id);
    const res = await call(server, "GET", "/v1/models", bearer(key));
    expect(res.status).toBe(401);
    await expectErrorEnvelope(res, [key]);
  });

  it("revokes in another process sharing the database", async () => {
    const { id, key } = await services.auth.apiKeys.create({ user: "user@example.test" });
    for (const target of [server, secondServer]) {
      expect((await call(target, "GET", "/v1/models", bearer(key))).status).toBe(200);
    }
    await services.auth.apiKeys.revoke(id);
    expect(await statusOnSecondWithin2s(key)).toBe(401);
  });

  it("never serves a revoked key from cache while LISTEN is down, and listens again", async () => {
    // Each process has one LISTEN connection (src/db/listener.ts), shared by the key cache and the ledger.
    const listenerPids = "select pid from pg_stat_activity where datname = current_database() and query like 'LISTEN %'";
    const listeners = async () => (await db.pool.query(listenerPids)).rowCount ?? 0;

    const first = await services.auth.apiKeys.create({ user: "user@example.test" });
    expect((await call(secondServer, "GET", "/v1/models", bearer(first.key))).status).toBe(200);
    expect(await listeners()).toBe(2);
    await db.pool.query(`select pg_terminate_backend(pid) from (${listenerPids}) l`);
    await services.auth.apiKeys.revoke(first.id);
    expect(await statusOnSecondWithin2s(first.key)).toBe(401);

    // Reconnection backs off from 1s; after it the cache must work, and be invalidated, again.
    for (const deadline = Date.now() + 10_000; (await listeners()) < 2 && Date.now() < deadline;) await sleep(100);
    expect(await listeners()).toBe(2);
    const second = await services.auth.apiKeys.create({ user: "user@example.test" });
    expect((await call(secondServer, "GET", "/v1/models", bearer(second.key))).status).toBe(200);
    await services.auth.apiKeys.revoke(second.id);
    expect(await statusOnSecondWithin2s(second.key)).toBe(401);
  });

  it("revoking twice keeps the first revocation; unknown ids are 404", async () => {
    const { id } = await services.auth.apiKeys.create({ user: "user@example.test" });
    const first = await services.auth.apiKeys.revoke(id);
    const second = await services.auth.apiKeys.revoke(id);
    expect(second.revoked_at).toBe(first.revoked_at);
    await expect(services.auth.apiKeys.revoke("not-a-uuid")).rejects.toMatchObject({ status: 404, code: "key_not_found" });
    const unknownId = "00000000-0000-4000-8000-000000000000";
    await expect(services.auth.apiKeys.revoke(unknownId)).rejects.toMatchObject({ status: 404, code: "key_not_found" });
  });

  it("lists only the models a restricted key may use", async () => {
    const { key, models } = await services.auth.apiKeys.create({ user: "user@example.test", models: ["m1", "m1"] });
    expect(models).toEqual(["m1"]);
    const res = await call(server, "GET", "/v1/models", bearer(key));
    const body = (await res.json()) as { data: { id: string }[] };
    expect(body.data.map((m) => m.id)).toEqual(["m1"]);
    const unknownModel = services.auth.apiKeys.create({ user: "user@example.test", models: ["nope"] });
    await expect(unknownModel).rejects.toMatchObject({ status: 400, param: "models" });
  });
});

describe("login and sessions", () => {
  it("answers a wrong password and an unknown email with the same 401", async () => {
    const wrong = await login("user@example.test", "not-the-password");
    const unknown = await login("nobody@example.test", PASSWORD);
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    const a = await expectErrorEnvelope(wrong, ["not-the-password"]);
    const b = await expectErrorEnvelope(unknown, [PASSWORD]);
    expect(a.message).toBe(b.message);
    expect(a.code).toBe("invalid_credentials");
    expect(b.code).toBe("invalid_credentials");
  });

  it("sets a session cookie that authenticates user endpoints", async () => {
    const res = await login("USER@example.test", PASSWORD);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { token: string; csrf_token: string; expires_at: string; user: { email: string } };
    expect(body.user.email).toBe("user@example.test");
    expect(Date.parse(body.expires_at)).toBeGreaterThan(Date.now());
    const cookie = res.headers.get("set-cookie")!;
    expect(cookie).toContain(`gw_session=${body.token}`);
    for (const attribute of ["HttpOnly", "SameSite=Strict", "Path=/api", `Max-Age=${services.config.auth.session_ttl_seconds}`]) {
      expect(cookie).toContain(attribute);
    }
    expect(cookie).not.toMatch(/Secure/);
    const me = await call(server, "GET", "/api/v1/user/me", { cookie: `gw_session=${body.token}` });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ email: "user@example.test", role: "user", plan: "free" });
  });

  it("rejects the token after logout", async () => {
    const { token } = await session("user@example.test");
    expect((await call(server, "GET", "/api/v1/user/me", bearer(token))).status).toBe(200);
    const out = await call(server, "POST", "/api/v1/auth/logout", bearer(token));
    expect(out.status).toBe(200);
    expect(await out.json()).toEqual({ ok: true });
    expect(out.headers.get("set-cookie")).toMatch(/gw_session=;.*Max-Age=0/);
    const after = await call(server, "GET", "/api/v1/user/me", bearer(token));
    expect(after.status).toBe(401);
    await expectErrorEnvelope(after, [token]);
    expect((await call(server, "POST", "/api/v1/auth/logout", bearer(token))).status).toBe(401);
  });

  it("rejects a login body without a password with 400 naming the field", async () => {
    const res = await call(server, "POST", "/api/v1/auth/login", {}, { email: "user@example.test" });
    expect(res.status).toBe(400);
    expect((await expectErrorEnvelope(res)).param).toBe("password");
  });

  it("rejects malformed JSON with 400", async () => {
    const res = await call(server, "POST", "/api/v1/auth/login", {}, '{"email": "user@example.test", ');
    expect(res.status).toBe(400);
    expect((await expectErrorEnvelope(res)).type).toBe("invalid_request_error");
  });
});

describe("admin user management", () => {
  it("refuses a duplicate email regardless of case with 409", async () => {
    const headers = (await session("admin@example.test")).adminHeaders;
    const email = freshEmail();
    expect((await call(server, "POST", "/api/v1/admin/users", headers, { email, password: PASSWORD })).status).toBe(201);
    const dup = await call(server, "POST", "/api/v1/admin/users", headers, { email: email.toUpperCase(), password: PASSWORD });
    expect(dup.status).toBe(409);
    expect((await expectErrorEnvelope(dup, [PASSWORD])).code).toBe("email_taken");
  });

  it("creates and revokes keys over HTTP, showing the secret once", async () => {
    const headers = (await session("admin@example.test")).adminHeaders;
    const created = await call(server, "POST", "/api/v1/admin/keys", headers, { user: "user@example.test", models: ["m2"] });
    expect(created.status).toBe(201);
    const key = (await created.json()) as { id: string; key: string; prefix: string };
    expect(key.key.startsWith(key.prefix)).toBe(true);
    const listed = await (await call(server, "GET", "/api/v1/admin/keys?user=user@example.test", headers)).text();
    expect(listed).toContain(key.id);
    expect(listed).not.toContain(key.key);
    const revoked = await call(server, "POST", `/api/v1/admin/keys/${key.id}/revoke`, headers);
    expect(revoked.status).toBe(200);
    expect(((await revoked.json()) as { revoked_at: string | null }).revoked_at).not.toBeNull();
    expect((await call(server, "GET", "/v1/models", bearer(key.key))).status).toBe(401);
  });
});
