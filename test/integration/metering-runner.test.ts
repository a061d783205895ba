import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiKeyAuth } from "../../src/auth/middleware.js";
import { deliverJson } from "../../src/metering/deliver.js";
import { chatPricing, type PricingFor } from "../../src/metering/pricing.js";
import { meteredHandler, type InferenceDeps, type RouteSpec } from "../../src/metering/metered-handler.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { UpstreamError } from "../../src/providers/types.js";
import type { AppEnv } from "../../src/server/context.js";
import { handleError } from "../../src/server/error-envelope.js";
import { listen, type HttpServer } from "../../src/server/listen.js";
import { createLogger } from "../../src/logger.js";
import { requestContext } from "../../src/server/request-context.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startTestGateway, type TestGateway, testTransport } from "../helpers/gateway-app.js";
import { settled } from "../helpers/metering-checks.js";

// The runner owns the meter's outcome (docs/architecture.md, "The metering path"): whatever a route's delivery
// does (throws, finds the answer invalid, fails to count or price the usage), its hold is posted or voided
// exactly once and the request logged exactly once. And the hooks routes other than chat need: a body that is
// not JSON, a hold the route states itself, an answer refused without trying the next target.

let mock: MockUpstream;
let a: FaultProxy;
let b: FaultProxy;
let gw: TestGateway;
let http: HttpServer;
let users = 0;

/** How each test's route misbehaves. */
type Mode = "throws" | "invalid-in-json" | "invalid-in-call" | "count-fails" | "pricing-fails" | "text-body";

interface Body {
  mode: Mode;
  prompt: string;
}

const pricingThatFailsOnSettlement: PricingFor = (model, key, config, byok) => {
  const pricing = chatPricing(model, key, config, byok);
  let priced = 0;
  return {
    account: pricing.account,
    upstreamCost: pricing.upstreamCost,
    charge(usage) {
      if (++priced > 1) throw new Error("a rate went missing");
      return pricing.charge(usage);
    },
  };
};

function spec(mode: Mode): RouteSpec<Body> {
  return {
    route: `/t/${mode}`,
    clientProtocol: "openai",
    kind: "chat",
    protocols: ["openai"],
    pricing:
      mode === "pricing-fails"
        ? pricingThatFailsOnSettlement
        : mode === "text-body"
          ? (model, key, config, byok) => ({ ...chatPricing(model, key, config, byok), hold: 777n })
          : undefined,
    read:
      mode === "text-body"
        ? async (c) => {
            const text = await c.req.text();
            return { value: { prompt: text }, text };
          }
        : undefined,
    parse: (raw) => ({ mode, prompt: String((raw as { prompt?: unknown }).prompt ?? "") }),
    describe: (body) => ({
      modelId: "m",
      streamed: false,
      estimate: { promptTokens: 10, completionTokens: 10 },
      countPrompt: async () => body.prompt.length,
    }),
    async call(adapter, target, body, options) {
      const answer = await adapter.chatCompletions!(
        { model: target.upstreamModel, messages: [{ role: "user", content: body.prompt }] },
        options,
      );
      if (body.mode === "invalid-in-call") throw new UpstreamError("invalid_output", answer.status);
      return answer;
    },
    json(answer, delivery) {
      if (mode === "throws") throw new Error("a bug in the route's delivery");
      if (mode === "invalid-in-json") throw new UpstreamError("invalid_output", answer.status);
      if (mode === "count-fails")
        return deliverJson(delivery, answer.kind === "json" ? answer.raw : "", null, () => Promise.reject(new Error("tokenizer gone")));
      return deliverJson(delivery, answer.kind === "json" ? answer.raw : "", answer.usage, async () => answer.usage!);
    },
  };
}

beforeAll(async () => {
  mock = await startMockUpstream();
  a = await startFaultProxy(mock.url);
  b = await startFaultProxy(mock.url);
  gw = await startTestGateway({
    config: {
      providers: { a: { protocol: "openai", base_url: a.baseUrl() }, b: { protocol: "openai", base_url: b.baseUrl() } },
      models: { m: { kind: "chat", upstream: "mock-gpt-small", targets: ["a", "b"] } },
      plans: { free: { daily_tokens: 1_000_000, context_limit: 128_000 } },
    },
  });
  const { services } = gw;
  const inference: InferenceDeps = {
    config: services.config,
    catalog: services.catalog,
    providers: services.providers,
    metering: services.metering,
    download: services.download,
    bodyLimit: 1 << 20,
  };
  const app = new Hono<AppEnv>();
  app.use("*", requestContext(createLogger("silent")));
  app.onError(handleError);
  app.use("/t/*", apiKeyAuth(services.auth.keyAuth));
  for (const mode of ["throws", "invalid-in-json", "invalid-in-call", "count-fails", "pricing-fails", "text-body"] as const) {
    app.post(`/t/${mode}`, meteredHandler(inference, spec(mode)));
  }
  http = await listen(app, "127.0.0.1", 0, testTransport());
});

afterAll(async () => {
  await http?.close(0);
  await gw?.close();
  await a?.close();
  await b?.close();
  await mock?.close();
});

async function newUser() {
  const email = `runner-${++users}@example.test`;
  const user = await gw.services.auth.users.create({ email, password: "password-123" });
  return { id: user.id, key: (await gw.services.auth.apiKeys.create({ user: email })).key };
}

async function send(key: string, mode: Mode, body = JSON.stringify({ prompt: "hello there" }), type = "application/json") {
  const res = await fetch(`${http.url}/t/${mode}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": type },
    body,
  });
  return { status: res.status, body: (await res.json()) as { error?: { code: string; type: string } } & Record<string, unknown> };
}

describe("the runner owns the outcome", () => {
  it("a delivery that throws voids the hold and logs the request once, as an internal error", async () => {
    const user = await newUser();
    const res = await send(user.key, "throws");
    expect(res).toMatchObject({ status: 500, body: { error: { code: "internal_error", type: "api_error" } } });
    const s = await settled([gw], user.id);
    expect(s.hold).toMatchObject({ status: "voided", charged: null });
    expect(s.log).toMatchObject({
      status: 500,
      error_code: "internal_error",
      error_class: "internal",
      quota_charged: "0",
      usage_source: "none",
    });
  });

  for (const mode of ["invalid-in-json", "invalid-in-call"] as const) {
    it(`an answer refused as invalid output (${mode}) is 502, voided, and never generated again on the next target`, async () => {
      const user = await newUser();
      const before = { a: a.requests.length, b: b.requests.length };
      const res = await send(user.key, mode);
      expect(res).toMatchObject({ status: 502, body: { error: { code: "upstream_invalid_output", type: "api_error" } } });
      expect({ a: a.requests.length - before.a, b: b.requests.length - before.b }).toEqual({ a: 1, b: 0 });
      const s = await settled([gw], user.id);
      expect(s.hold).toMatchObject({ status: "voided" });
      expect(s.log).toMatchObject({
        status: 502,
        error_code: "upstream_invalid_output",
        error_class: "upstream_error",
        quota_charged: "0",
      });
    });
  }

  it("a usage count that fails charges the hold (never free), once, marked as such", async () => {
    const user = await newUser();
    const res = await send(user.key, "count-fails");
    expect(res.status).toBe(200);
    const s = await settled([gw], user.id);
    expect(s.hold.status).toBe("posted");
    expect(s.hold.charged).toBe(s.hold.amount);
    expect(s.log).toMatchObject({ status: 200, error_code: null, usage_source: "hold", quota_charged: s.hold.amount });
  });

  it("a pricing that throws at settlement charges the hold, once", async () => {
    const user = await newUser();
    const res = await send(user.key, "pricing-fails");
    expect(res.status).toBe(200);
    const s = await settled([gw], user.id);
    expect(s.hold).toMatchObject({ status: "posted", charged: s.hold.amount });
    expect(s.log).toMatchObject({ usage_source: "hold", quota_charged: s.hold.amount, input_tokens: 0 });
  });
});

describe("hooks for routes other than chat", () => {
  it("reads a body that is not JSON with the route's reader, and holds the amount the route states", async () => {
    const user = await newUser();
    const res = await send(user.key, "text-body", "plain words, not JSON", "text/plain");
    expect(res.status).toBe(200);
    const s = await settled([gw], user.id);
    expect(s.hold).toMatchObject({ status: "posted", amount: "777" });
    expect(s.log).toMatchObject({ status: 200, usage_source: "upstream" });
  });

  it("refuses the usual way before anything is held: a bad key, and a JSON body on a JSON route with the wrong type", async () => {
    const user = await newUser();
    expect((await send("gw_wrong", "throws")).status).toBe(401);
    const res = await send(user.key, "throws", "not json", "text/plain");
    expect(res).toMatchObject({ status: 415, body: { error: { code: "unsupported_media_type" } } });
    await gw.services.requestLog.flush();
    const { rows } = await gw.db.pool.query(
      "select status, error_code, received_at <= created_at as ordered from request_logs where user_id = $1",
      [user.id],
    );
    expect(rows).toEqual([{ status: 415, error_code: "unsupported_media_type", ordered: true }]);
  });
});
