import { Validator } from "@seriousme/openapi-schema-validator";
import { execa } from "execa";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp } from "../../src/runtime/app.js";
import { apiDescription } from "../../src/runtime/routes.js";
import { answerValidator, coverageGaps, describedRoutes, servedRoutes } from "../helpers/api-description.js";
import { gatewayBin } from "../helpers/cli.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { postLogin } from "../helpers/login.js";

type Document = Parameters<typeof describedRoutes>[0] & { openapi: string; info: { version: string } };

const BOT_TOKEN = "bot-token-for-the-description-test";
const METRICS_TOKEN = "metrics-token-for-the-description-test";
const PASSWORD = "correct horse battery";

let gw: TestGateway;
let document: Document;

beforeAll(async () => {
  gw = await startTestGateway({
    // Metrics on the main address, so that every described route is served.
    config: {
      plans: { free: { daily_tokens: 5000, weekly_resets: 1, context_limit: 100000 } },
      metrics: { enabled: true, token: METRICS_TOKEN },
    },
    env: { SUPPORT_BOT_TOKEN: BOT_TOKEN },
  });
  const res = await fetch(`${gw.url}/openapi.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  document = (await res.json()) as Document;
});
afterAll(() => gw?.close());

describe("the API description", () => {
  it("is a valid OpenAPI 3.1 document of API version 1.0.0, served without a credential", async () => {
    expect(document.openapi).toBe("3.1.0");
    expect(document.info.version).toBe("1.0.0");
    const result = await new Validator().validate(document as unknown as Parameters<Validator["validate"]>[0]);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("is the document `gateway openapi` prints", async () => {
    const printed = await execa(gatewayBin, ["openapi"]);
    expect(JSON.parse(printed.stdout)).toEqual(document);
    expect(apiDescription()).toEqual(document);
  });

  it("describes every route the app serves, and no route it does not serve", () => {
    const app = createApp(gw.services);
    const gaps = coverageGaps(servedRoutes(app.routes), describedRoutes(document));
    expect(gaps).toEqual({ undescribed: [], unserved: [] });
  });

  it("the coverage check sees an undescribed route and a described route that is not served", () => {
    const app = new Hono().get("/healthz", (c) => c.text("")).post("/v1/extra/:id", (c) => c.text(""));
    app.use("/v1/*", async (_c, next) => next());
    const described = new Set(["GET /healthz", "GET /readyz"]);
    expect(coverageGaps(servedRoutes(app.routes), described)).toEqual({ undescribed: ["POST /v1/extra/{}"], unserved: ["GET /readyz"] });
  });

  it("every error answer is the envelope, and every operation lists its credential's and its body's errors", () => {
    for (const [path, item] of Object.entries(document.paths)) {
      for (const [method, op] of Object.entries(item) as [string, { security: unknown[]; responses: Record<string, unknown> }][]) {
        const statuses = Object.keys(op.responses);
        expect(statuses, `${method} ${path}`).toContain("500");
        if (op.security.length > 0) expect(statuses, `${method} ${path}`).toContain("401");
        for (const status of statuses.filter((s) => Number(s) >= 400 && path !== "/readyz")) {
          const content = (op.responses[status] as { content: Record<string, { schema: unknown }> }).content;
          expect(content["application/json"]!.schema, `${method} ${path} ${status}`).toEqual({
            $ref: "#/components/schemas/ErrorResponse",
          });
        }
      }
    }
    const chat = document.paths["/v1/chat/completions"]!.post!;
    expect(Object.keys(chat.responses)).toEqual(expect.arrayContaining(["200", "400", "401", "403", "404", "413", "415", "429", "502"]));
    const evaluation = document.paths["/v1/systemone"]!.post!;
    expect(Object.keys(evaluation.responses)).toContain("422");
    expect(evaluation.responses["400"]).toMatchObject({ description: expect.stringContaining("context_length_exceeded") });
    expect(evaluation.responses["400"]).not.toMatchObject({ description: expect.stringContaining("invalid_json") });
  });
});

describe("real answers of the gateway's own routes match the description", () => {
  let check: ReturnType<typeof answerValidator>;
  let session: { token: string; csrf_token: string };
  let adminSession: { token: string; csrf_token: string };
  let apiKey: string;

  beforeAll(async () => {
    check = answerValidator(document);
    const { users, apiKeys } = gw.services.auth;
    await users.create({ email: "user@example.test", password: PASSWORD, plan: "free" });
    await users.create({ email: "admin@example.test", password: PASSWORD, role: "admin" });
    apiKey = (await apiKeys.create({ user: "user@example.test" })).key;
    const login = async (email: string) => {
      const res = await postLogin(gw.url, email, PASSWORD);
      const body = (await res.json()) as { token: string; csrf_token: string };
      expect(check("POST", "/api/v1/auth/login", res.status, body)).toEqual([]);
      return body;
    };
    session = await login("user@example.test");
    adminSession = await login("admin@example.test");
  });

  const bearer = (token: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${token}`, ...extra });

  async function expectDescribed(method: string, template: string, res: Response, status: number) {
    expect(res.status).toBe(status);
    const body: unknown = await res.json();
    expect(check(method, template, res.status, body)).toEqual([]);
    return body;
  }

  it("probes, the session user's own views, the model list", async () => {
    await expectDescribed("GET", "/healthz", await fetch(`${gw.url}/healthz`), 200);
    await expectDescribed("GET", "/readyz", await fetch(`${gw.url}/readyz`), 200);
    const headers = bearer(session.token);
    const quota = await expectDescribed("GET", "/api/v1/user/quota", await fetch(`${gw.url}/api/v1/user/quota`, { headers }), 200);
    expect(quota).toMatchObject({ plan: "free", allowance: 5000 });
    await expectDescribed("GET", "/api/v1/user/me", await fetch(`${gw.url}/api/v1/user/me`, { headers }), 200);
    await expectDescribed("GET", "/api/v1/user/reseller-balance", await fetch(`${gw.url}/api/v1/user/reseller-balance`, { headers }), 200);
    const models = await expectDescribed("GET", "/v1/models", await fetch(`${gw.url}/v1/models`, { headers: bearer(apiKey) }), 200);
    expect(models).toMatchObject({ object: "list", data: [{ id: "m1" }] });
  });

  it("the index and model discovery in each vendor's shape", async () => {
    await expectDescribed("GET", "/", await fetch(`${gw.url}/`), 200);
    const key = bearer(apiKey);
    const anthropic = bearer(apiKey, { "anthropic-version": "2023-06-01" });
    await expectDescribed("GET", "/v1/models/{model}", await fetch(`${gw.url}/v1/models/m1`, { headers: key }), 200);
    await expectDescribed("GET", "/v1/models/{model}", await fetch(`${gw.url}/v1/models/m1`, { headers: anthropic }), 200);
    await expectDescribed("GET", "/v1/models/{model}", await fetch(`${gw.url}/v1/models/nope`, { headers: key }), 404);
    const page = await expectDescribed("GET", "/v1/models", await fetch(`${gw.url}/v1/models`, { headers: anthropic }), 200);
    expect(page).toMatchObject({ data: [{ type: "model", id: "m1" }], has_more: false });
    const gemini = `${gw.url}/compatible/v1beta/models`;
    await expectDescribed("GET", "/compatible/v1beta/models", await fetch(gemini, { headers: key }), 200);
    await expectDescribed("GET", "/compatible/v1beta/models/{model}", await fetch(`${gemini}/m1`, { headers: key }), 200);
  });

  it("the request log, with a failed request in it", async () => {
    // The test config's provider listens nowhere: the request fails upstream and is logged with its error code.
    const chat = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: bearer(apiKey, { "content-type": "application/json" }),
      body: JSON.stringify({ model: "m1", messages: [{ role: "user", content: "hi" }] }),
    });
    await expectDescribed("POST", "/v1/chat/completions", chat, 502);
    let page: { requests: unknown[] } = { requests: [] };
    for (let i = 0; i < 100 && page.requests.length === 0; i++) {
      const res = await fetch(`${gw.url}/api/v1/user/requests?limit=5`, { headers: bearer(session.token) });
      page = (await expectDescribed("GET", "/api/v1/user/requests", res, 200)) as typeof page;
      if (page.requests.length === 0) await new Promise((r) => setTimeout(r, 50));
    }
    expect(page.requests).toEqual([expect.objectContaining({ model: "m1", error_code: "upstream_unreachable" })]);
  });

  it("admin reads and state changes", async () => {
    const headers = bearer(adminSession.token, { "x-csrf-token": adminSession.csrf_token, "content-type": "application/json" });
    await expectDescribed("GET", "/api/v1/admin/users", await fetch(`${gw.url}/api/v1/admin/users`, { headers }), 200);
    const created = await fetch(`${gw.url}/api/v1/admin/keys`, {
      method: "POST",
      headers,
      body: JSON.stringify({ user: "user@example.test", name: "described" }),
    });
    const key = (await expectDescribed("POST", "/api/v1/admin/keys", created, 201)) as { id: string };
    await expectDescribed("GET", "/api/v1/admin/keys", await fetch(`${gw.url}/api/v1/admin/keys?user=user@example.test`, { headers }), 200);
    const revoked = await fetch(`${gw.url}/api/v1/admin/keys/${key.id}/revoke`, { method: "POST", headers });
    await expectDescribed("POST", "/api/v1/admin/keys/{id}/revoke", revoked, 200);
    const credit = (key: string | null, usd = "2.50") =>
      fetch(`${gw.url}/api/v1/admin/reseller-balances/user@example.test/credits`, {
        method: "POST",
        headers: key === null ? headers : { ...headers, "idempotency-key": key },
        body: JSON.stringify({ usd }),
      });
    const credits = "/api/v1/admin/reseller-balances/{user}/credits";
    await expectDescribed("POST", credits, await credit(null), 201);
    await expectDescribed("POST", credits, await credit("described-credit"), 201);
    await expectDescribed("POST", credits, await credit("described-credit"), 201);
    await expectDescribed("POST", credits, await credit("described-credit", "3"), 422);
    await expectDescribed("POST", credits, await credit(""), 400);
    const grant = (key: string, count: number) =>
      fetch(`${gw.url}/api/v1/admin/users/user@example.test/quota-resets`, {
        method: "POST",
        headers: { ...headers, "idempotency-key": key },
        body: JSON.stringify({ count }),
      });
    await expectDescribed("POST", "/api/v1/admin/users/{user}/quota-resets", await grant("described-grant", 1), 201);
    await expectDescribed("POST", "/api/v1/admin/users/{user}/quota-resets", await grant("described-grant", 1), 201);
    await expectDescribed("POST", "/api/v1/admin/users/{user}/quota-resets", await grant("described-grant", 2), 422);
    await expectDescribed("POST", "/api/v1/admin/users/{user}/quota-resets", await grant("x".repeat(256), 1), 400);
    const described = document.paths[credits]!.post! as unknown as { parameters: { name: string; in: string }[] };
    expect(described.parameters).toContainEqual(expect.objectContaining({ name: "Idempotency-Key", in: "header" }));
  });

  it("reserve resets and token transfers, the user's and the admin's", async () => {
    const json = (token: string, csrf?: string) =>
      bearer(token, { "content-type": "application/json", ...(csrf ? { "x-csrf-token": csrf } : {}) });
    const user = json(session.token);
    const call = (method: string, path: string, headers: Record<string, string>, body?: unknown) =>
      fetch(`${gw.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    await expectDescribed("GET", "/api/v1/user/quota-resets", await call("GET", "/api/v1/user/quota-resets", user), 200);
    const flag = await call("PUT", "/api/v1/user/quota-resets", user, { auto_reset_enabled: true });
    await expectDescribed("PUT", "/api/v1/user/quota-resets", flag, 200);
    await expectDescribed("POST", "/api/v1/user/quota-resets/use", await call("POST", "/api/v1/user/quota-resets/use", user), 409);
    const keyed = (key: string) => ({ ...user, "idempotency-key": key });
    await expectDescribed("POST", "/api/v1/user/quota-resets/use", await call("POST", "/api/v1/user/quota-resets/use", keyed("u")), 409);
    await expectDescribed("POST", "/api/v1/user/quota-resets/use", await call("POST", "/api/v1/user/quota-resets/use", keyed("u")), 409);
    await expectDescribed("POST", "/api/v1/user/quota-resets/use", await call("POST", "/api/v1/user/quota-resets/use", keyed("\t")), 400);

    const prefs = await call("PATCH", "/api/v1/user/token-transfers/preferences", user, { receive_disabled: false });
    await expectDescribed("PATCH", "/api/v1/user/token-transfers/preferences", prefs, 200);
    const preview = await call("POST", "/api/v1/user/token-transfers/preview", user, { recipient: "admin@example.test", amount: 3 });
    expect(await expectDescribed("POST", "/api/v1/user/token-transfers/preview", preview, 200)).toMatchObject({ allowed: true });
    const send = { recipient: "admin@example.test", amount: 3, idempotency_key: "described" };
    await expectDescribed("POST", "/api/v1/user/token-transfers", await call("POST", "/api/v1/user/token-transfers", user, send), 202);
    const reused = await call("POST", "/api/v1/user/token-transfers", user, { ...send, amount: 4 });
    await expectDescribed("POST", "/api/v1/user/token-transfers", reused, 422);
    // The gateway completes it at once (refused: the recipient spent nothing); the same send then answers 200.
    const listed = async () => {
      const list = await call("GET", "/api/v1/user/token-transfers?limit=1", user);
      return (await expectDescribed("GET", "/api/v1/user/token-transfers", list, 200)) as { transfers: { status: string }[] };
    };
    await expect.poll(async () => (await listed()).transfers[0]?.status, { timeout: 30_000 }).toBe("refused");
    const replay = await call("POST", "/api/v1/user/token-transfers", user, send);
    expect(await expectDescribed("POST", "/api/v1/user/token-transfers", replay, 200)).toMatchObject({ reason: "nothing_to_refill" });

    const admin = json(adminSession.token, adminSession.csrf_token);
    const policy = (await expectDescribed(
      "GET",
      "/api/v1/admin/token-transfers/policy",
      await call("GET", "/api/v1/admin/token-transfers/policy", admin),
      200,
    )) as { revision: number };
    const change = {
      revision: policy.revision,
      enabled: true,
      min_amount: 1,
      send_daily_limit: 10,
      receive_daily_limit: 10,
      service_daily_limit: 100,
    };
    await expectDescribed(
      "PUT",
      "/api/v1/admin/token-transfers/policy",
      await call("PUT", "/api/v1/admin/token-transfers/policy", admin, change),
      200,
    );
    await expectDescribed(
      "PUT",
      "/api/v1/admin/token-transfers/policy",
      await call("PUT", "/api/v1/admin/token-transfers/policy", admin, change),
      409,
    );
    await expectDescribed("GET", "/api/v1/admin/token-transfers", await call("GET", "/api/v1/admin/token-transfers", admin), 200);
  });

  it("error envelopes, with the statuses the description gives them", async () => {
    const noSession = await fetch(`${gw.url}/api/v1/user/quota`);
    await expectDescribed("GET", "/api/v1/user/quota", noSession, 401);
    const badLogin = await fetch(`${gw.url}/api/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{",
    });
    await expectDescribed("POST", "/api/v1/auth/login", badLogin, 400);
    const noCsrf = await fetch(`${gw.url}/api/v1/admin/users`, {
      method: "POST",
      headers: bearer(adminSession.token, { "content-type": "application/json" }),
      body: JSON.stringify({ email: "x@example.test", password: PASSWORD }),
    });
    await expectDescribed("POST", "/api/v1/admin/users", noCsrf, 403);
    const badCursor = await fetch(`${gw.url}/api/v1/user/requests?cursor=nope`, { headers: bearer(session.token) });
    await expectDescribed("GET", "/api/v1/user/requests", badCursor, 400);
    const ping = await fetch(`${gw.url}/api/v1/internal/ping`, { headers: bearer(BOT_TOKEN) });
    await expectDescribed("GET", "/api/v1/internal/ping", ping, 200);
    await expectDescribed("GET", "/metrics", await fetch(`${gw.url}/metrics`, { headers: bearer("wrong") }), 401);
    const metrics = await fetch(`${gw.url}/metrics`, { headers: bearer(METRICS_TOKEN) });
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it("the validator refuses an answer that does not match", () => {
    expect(check("GET", "/api/v1/user/quota", 200, { plan: "free" })).not.toEqual([]);
    expect(check("GET", "/healthz", 200, { status: "ok", extra: 1 })).not.toEqual([]);
  });
});
