import { connect } from "node:net";
import http from "node:http";
import { SignJWT, type JWTPayload } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";

// The probes of the security review (issue 20) that held, kept so that they keep holding: forged sessions, odd
// paths to the admin surface, and request smuggling. Each is an attack a change could open without noticing.

const SECRET = "a-session-signing-secret-for-the-held-probes-0123456789";
const PASSWORD = "a-long-password-for-the-held-probes";

let gw: TestGateway;
let user: { id: string; token: string };
let admin: { id: string; token: string };

const login = async (email: string) => (await logIn(gw.url, email, PASSWORD)).token;

beforeAll(async () => {
  gw = await startTestGateway({ env: { GATEWAY_JWT_SECRET: SECRET } });
  const { users } = gw.services.auth;
  const u = await users.create({ email: "probe-user@example.test", password: PASSWORD });
  const a = await users.create({ email: "probe-admin@example.test", password: PASSWORD, role: "admin" });
  user = { id: u.id, token: await login("probe-user@example.test") };
  admin = { id: a.id, token: await login("probe-admin@example.test") };
});

afterAll(async () => {
  await gw?.close();
});

const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8")) as JWTPayload;

const status = async (path: string, token: string) =>
  (await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${token}` } })).status;

function sign(payload: JWTPayload, opts: { alg?: string; secret?: string; audience?: string; expires?: number } = {}) {
  const jwt = new SignJWT(payload)
    .setProtectedHeader({ alg: opts.alg ?? "HS256", typ: "JWT" })
    .setIssuer("gateway")
    .setAudience(opts.audience ?? "gateway-session")
    .setIssuedAt()
    .setExpirationTime(opts.expires ?? Math.floor(Date.now() / 1000) + 3600);
  return jwt.sign(new TextEncoder().encode(opts.secret ?? SECRET));
}

describe("forged sessions", () => {
  it("accepts the real tokens (the probes below start from them)", async () => {
    expect(await status("/api/v1/user/quota", user.token)).toBe(200);
    expect(await status("/api/v1/admin/users", admin.token)).toBe(200);
  });

  it("refuses alg none, a tampered payload, another secret, HS512, another audience, an expired token and a swapped user", async () => {
    const mine = claimsOf(user.token);
    const theirs = claimsOf(admin.token);
    const unsigned = (payload: object) =>
      `${Buffer.from(JSON.stringify({ alg: "none", typ: "JWT" })).toString("base64url")}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}.`;
    const [header, , signature] = user.token.split(".");
    const forged = {
      "alg none": unsigned(mine),
      "tampered role": `${header}.${Buffer.from(JSON.stringify({ ...mine, role: "admin", sub: admin.id })).toString("base64url")}.${signature}`,
      "wrong secret": await sign({ sid: mine.sid, sub: mine.sub, role: "user" }, { secret: "another-secret-of-at-least-32-characters!!" }),
      HS512: await sign({ sid: mine.sid, sub: mine.sub, role: "user" }, { alg: "HS512" }),
      "wrong audience": await sign({ sid: mine.sid, sub: mine.sub, role: "user" }, { audience: "gateway-embed" }),
      expired: await sign({ sid: mine.sid, sub: mine.sub, role: "user" }, { expires: Math.floor(Date.now() / 1000) - 10 }),
      // A valid signature (the secret leaked, say) still needs a session row of that very user.
      "swapped user": await sign({ sid: mine.sid, sub: theirs.sub, role: "admin" }),
    };
    for (const [name, token] of Object.entries(forged)) {
      expect(await status("/api/v1/user/quota", token), name).toBe(401);
      expect(await status("/api/v1/admin/users", token), name).toBe(401);
    }
  });

  it("takes the role from the user's row, never from the token", async () => {
    const mine = claimsOf(user.token);
    const promoted = await sign({ sid: mine.sid, sub: mine.sub, role: "admin" });
    expect(await status("/api/v1/user/quota", promoted)).toBe(200);
    expect(await status("/api/v1/admin/users", promoted)).toBe(403);
  });
});

/** A request with the path exactly as written (fetch and URL would normalise it first). */
function rawGet(path: string, token: string): Promise<number> {
  const { hostname, port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const req = http.request({ hostname, port, path, headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("odd paths to the admin surface", () => {
  it.each([
    "/%61pi/v1/admin/users",
    "/api/v1/%61dmin/users",
    "/api/v1/user/../admin/users",
    "/api/v1/user/%2e%2e/admin/users",
    "//api/v1/admin/users",
    "/api/v1/admin//users",
  ])("%s never answers a user session with the admin's data", async (path) => {
    const answer = await rawGet(path, user.token);
    expect([401, 403, 404]).toContain(answer);
  });
});

/** Writes `request` on a fresh connection and returns what came back before the server closed or went quiet. */
function rawExchange(request: string): Promise<string> {
  const { hostname, port } = new URL(gw.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(request));
    let received = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (received += chunk));
    socket.setTimeout(2000, () => socket.destroy());
    socket.on("close", () => resolve(received));
    socket.on("error", reject);
  });
}

describe("request smuggling", () => {
  const login = '{"email":"probe-user@example.test","password":"x"}';
  it("refuses a request with both Content-Length and Transfer-Encoding", async () => {
    const smuggled = "GET /api/v1/admin/users HTTP/1.1\r\nHost: x\r\n\r\n";
    const body = `${login.length.toString(16)}\r\n${login}\r\n0\r\n\r\n${smuggled}`;
    const answer = await rawExchange(
      `POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nTransfer-Encoding: chunked\r\n\r\n${body}`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    // One answer only: the tail was never taken for a second request.
    expect(answer.match(/HTTP\/1\.1 \d{3}/g)).toHaveLength(1);
  });

  it("refuses two different Content-Length headers", async () => {
    const answer = await rawExchange(
      `POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${login.length}\r\nContent-Length: 5\r\n\r\n${login}`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
  });
});
