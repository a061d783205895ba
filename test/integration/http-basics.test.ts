import { request } from "node:http";
import { Writable } from "node:stream";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runMigrations } from "../../src/db/migrate.js";
import { listen } from "../../src/server/listen.js";
import { createLogger } from "../../src/logger.js";
import { createTestDatabase } from "../helpers/db.js";
import { startTestGateway, type TestGateway, testTransport } from "../helpers/gateway-app.js";
import { validateOpenAI } from "../helpers/openapi.js";

const CAP = 2048;

describe("HTTP basics", () => {
  let gw: TestGateway;
  const logLines: string[] = [];
  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        logLines.push(...chunk.toString().split("\n").filter(Boolean));
        done();
      },
    });
    gw = await startTestGateway({ config: { server: { max_body_bytes: CAP } }, logger: createLogger("info", sink) });
  });
  afterAll(() => gw.close());

  async function expectEnvelope(res: Response, status: number, code: string | null) {
    expect(res.status).toBe(status);
    const requestId = res.headers.get("x-request-id");
    expect(requestId).toMatch(/^req_[0-9a-f]{32}$/);
    expect(res.headers.get("cache-control")).toBe("no-store");
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(validateOpenAI("ErrorResponse", body)).toEqual([]);
    expect(Object.keys(body.error).sort()).toEqual(["code", "message", "param", "request_id", "type"]);
    expect(body.error.request_id).toBe(requestId);
    expect(body.error.code).toBe(code);
    return body.error;
  }

  const login = (body: string, contentType = "application/json", headers: Record<string, string> = {}) =>
    fetch(`${gw.url}/api/v1/auth/login`, { method: "POST", headers: { "content-type": contentType, ...headers }, body });

  it.each([
    ["malformed JSON", () => login("{not json"), 400, "invalid_json"],
    ["empty body", () => login(""), 400, "invalid_json"],
    ["wrong content type", () => login("email=a&password=b", "application/x-www-form-urlencoded"), 415, "unsupported_media_type"],
    [
      "body over the cap (declared length)",
      () => login(JSON.stringify({ email: "a".repeat(CAP), password: "x" })),
      413,
      "request_too_large",
    ],
    ["unknown route", () => fetch(`${gw.url}/no/such/route`), 404, "unknown_route"],
    ["wrong method", () => fetch(`${gw.url}/api/v1/auth/login`, { method: "GET" }), 405, "method_not_allowed"],
    ["wrong type", () => login(JSON.stringify({ email: 42, password: "x" })), 400, "invalid_value"],
  ])("%s → the right status and envelope; the server keeps serving", async (_name, send, status, code) => {
    const error = await expectEnvelope(await send(), status, code);
    expect(error.message).toEqual(expect.any(String));
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
  });

  it("names the failing field in param", async () => {
    const error = await expectEnvelope(await login(JSON.stringify({ email: "a@b.co" })), 400, "invalid_value");
    expect(error.param).toBe("password");
  });

  it("lists allowed methods on 405", async () => {
    const res = await fetch(`${gw.url}/v1/models`, { method: "DELETE", headers: { authorization: "Bearer x" } });
    // The key check runs first on /v1: an unauthenticated caller learns nothing about routes.
    expect(res.status).toBe(401);
    const wrong = await fetch(`${gw.url}/healthz`, { method: "POST" });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toContain("GET");
  });

  it("refuses a chunked body over the cap while reading it", async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${gw.url}/api/v1/auth/login`, { method: "POST", headers: { "content-type": "application/json" } });
      req.on("response", (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on("error", reject);
      // No content-length: the cap has to be enforced on the bytes as they arrive.
      const chunk = "x".repeat(512);
      req.write('{"email":"');
      for (let i = 0; i < 8; i++) req.write(chunk);
      req.end('"}');
    });
    expect(status).toBe(413);
    expect((await fetch(`${gw.url}/healthz`)).status).toBe(200);
  });

  it("logs one access line per request with id, route, status and latency, and never a secret or body", async () => {
    const { users, apiKeys } = gw.services.auth;
    await users.create({ email: "logs@example.test", password: "secret-password-1" });
    const { key } = await apiKeys.create({ user: "logs@example.test" });
    const ok = await login(JSON.stringify({ email: "logs@example.test", password: "secret-password-1" }));
    const { token } = (await ok.json()) as { token: string };
    const models = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
    await login(JSON.stringify({ email: "logs@example.test", password: "wrong-password-2" }));
    await new Promise((r) => setTimeout(r, 50));
    const text = logLines.join("\n");
    for (const secret of [key, token, "secret-password-1", "wrong-password-2", "logs@example.test"]) {
      expect(text).not.toContain(secret);
    }
    const line = logLines.map((l) => JSON.parse(l)).find((l) => l.req_id === models.headers.get("x-request-id"));
    expect(line).toMatchObject({ msg: "request", method: "GET", route: "/v1/models", status: 200 });
    expect(line.latency_ms).toEqual(expect.any(Number));
  });

  it("reports readiness: database reachable and migrations applied", async () => {
    const res = await fetch(`${gw.url}/readyz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: "ready", checks: { database: true, migrations: true } });
  });
});

describe("readiness", () => {
  it("answers 503 while migrations are not applied", async () => {
    const db = await createTestDatabase({ migrate: false });
    // Auth needs its tables to start, so migrate them, then roll the bookkeeping back to look unmigrated.
    await runMigrations(db.pool, createLogger("silent"));
    await db.pool.query("delete from drizzle.__drizzle_migrations");
    const gw = await startTestGateway({ db });
    try {
      const res = await fetch(`${gw.url}/readyz`);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ status: "not_ready", checks: { database: true, migrations: false } });
    } finally {
      await gw.close();
      await db.drop();
    }
  });
});

describe("graceful shutdown", () => {
  it("lets in-flight requests finish and refuses new connections", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const app = new Hono().get("/slow", async (c) => {
      await gate;
      return c.text("done");
    });
    const server = await listen(app as never, "127.0.0.1", 0, testTransport());
    const inFlight = fetch(`${server.url}/slow`);
    await new Promise((r) => setTimeout(r, 50));
    const closed = server.close(10_000);
    await new Promise((r) => setTimeout(r, 50));
    await expect(fetch(`${server.url}/slow`)).rejects.toThrow();
    release();
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(await res.text()).toBe("done");
    await closed;
  });
});
