import OpenAI from "openai";
import { beforeAll, describe, expect, it } from "vitest";
import { systemOneQuota } from "../../src/billing/systemone.js";
import { EvaluationTokens } from "../../src/inference/systemone-tokens.js";
import type { MockUpstream } from "../../src/mock-upstream/server.js";
import { readAnswers } from "../../src/providers/systemone/read-answers.js";
import type { SystemOneRequest } from "../../src/providers/systemone/request-schema.js";
import type { TestGateway } from "../helpers/gateway-app.js";
import { quiesce, rowsOf, settled } from "../helpers/metering-checks.js";
import { QUESTIONS, evaluate, evaluation, evaluator, judge, useEvaluationGateway } from "../helpers/systemone.js";

// The evaluation service end to end: both routes through fetch and through the official OpenAI SDK's raw
// HTTP, answers keyed by the client's IDs, the public alias (reseller aliases included) in the answer, usage as
// the evaluator reports it (zeros stay zeros), the subscription charge in the ledger, the model lists, and
// the removed /v1/evaluate.

const RATES = { tokenMultiplier: 1.5, groupMultiplier: 0.5, longContext: { thresholdTokens: 60, multiplier: 2 } };
let mock: MockUpstream;
let gw: TestGateway;
let users = 0;

const fixture = useEvaluationGateway((proxy, mock) => ({
  providers: {
    main: evaluator(proxy),
    zero: evaluator(proxy, { "x-mock-zero-usage": 1 }),
    silent: evaluator(proxy, { "x-mock-omit-usage": 1 }),
    chat: { protocol: "openai", base_url: mock.baseUrl },
  },
  models: {
    "judge-1": judge(["main"], {
      token_multiplier: RATES.tokenMultiplier,
      long_context: { threshold_tokens: RATES.longContext.thresholdTokens, multiplier: RATES.longContext.multiplier },
      reseller_aliases: ["acme-judge"],
      reseller_price: { input_usd_per_million: 0.1 },
      description: "The evaluator, version 1.13",
      release_date: "2025-06-01",
    }),
    "judge-zero": judge(["zero"], { upstream: "systemone-1.13.0" }),
    "judge-silent": judge(["silent"]),
    chatty: { kind: "chat", upstream: "mock-gpt-small", targets: ["chat"] },
  },
  pricing_groups: { default: { multiplier: 1 }, half: { multiplier: RATES.groupMultiplier } },
  plans: { basic: { daily_tokens: 1_000_000, context_limit: 100_000 } },
  default_plan: "basic",
}));
beforeAll(() => void ({ mock, gw } = fixture));

async function freshUser(kind: "inference" | "reseller" = "inference", group = "half") {
  const user = await gw.services.auth.users.create({ email: `eval-${++users}@example.test`, password: "password-123" });
  const { key } = await gw.services.auth.apiKeys.create({ user: user.id, kind, pricing_group: group });
  return { id: user.id, key };
}

/** What the mock evaluator answers for `body` when asked directly. */
async function direct(body: Record<string, unknown>, headers: Record<string, string> = {}) {
  const res = await fetch(`${mock.url}/v1/systemone`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify({ ...body, model: "1.13.0" }),
  });
  return (await res.json()) as { answers: Record<string, unknown>; usage: { input_tokens: number; output_tokens: number } };
}

describe("POST /v1/systemone", () => {
  it("answers every question under the client's IDs with the public model ID, and charges ceil(input × multipliers)", async () => {
    const user = await freshUser();
    const body = evaluation("judge-1");
    const res = await evaluate(gw.url, user.key, body);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    const expected = await direct(body);
    expect(res.json).toEqual({ model: "judge-1", answers: expected.answers, usage: expected.usage });
    expect(Object.keys(res.json)).toEqual(["model", "answers", "usage"]);
    expect(readAnswers(QUESTIONS as unknown as SystemOneRequest["questions"], res.json)).toMatchObject({ ok: true });

    const charge = systemOneQuota(expected.usage.input_tokens, RATES);
    expect(expected.usage.input_tokens).toBeGreaterThan(RATES.longContext.thresholdTokens);
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({
      status: 200,
      route: "/v1/systemone",
      client_protocol: "systemone",
      public_model: "judge-1",
      upstream_model: "1.13.0",
      usage_source: "upstream",
      input_tokens: expected.usage.input_tokens,
      output_tokens: 3,
      quota_charged: String(charge),
    });
    // The output tokens are recorded, not charged: input × 2 (long context) × 1.5 × 0.5.
    expect(charge).toBe(BigInt(Math.ceil(expected.usage.input_tokens * 2 * 1.5 * 0.5)));
    expect(s.hold.status).toBe("posted");
  });

  it("is served at /native/v1/systemone too, and through the OpenAI SDK's raw HTTP on both", async () => {
    const user = await freshUser();
    const body = evaluation("judge-1");
    const viaFetch = await evaluate(gw.url, user.key, body, "/native/v1/systemone");
    expect(viaFetch.status).toBe(200);
    for (const baseURL of [`${gw.url}/v1`, `${gw.url}/native/v1`]) {
      const client = new OpenAI({ apiKey: user.key, baseURL, maxRetries: 0 });
      const answer = await client.post<Record<string, unknown>>("/systemone", { body });
      expect(answer).toEqual(viaFetch.json);
    }
    const s = await settled([gw], user.id, 3);
    expect(s.logs.map((l) => l.route).sort()).toEqual(["/native/v1/systemone", "/native/v1/systemone", "/v1/systemone"]);
  });

  it("keeps question IDs exactly (__proto__, spaces, unicode) and forwards other fields", async () => {
    const user = await freshUser();
    const text = `{"model":"judge-1","state":"plain text state","seed":42,"questions":{"__proto__":{"type":"noul"},"Q 1/ü":${JSON.stringify(QUESTIONS.tone)}}}`;
    const res = await evaluate(gw.url, user.key, text);
    expect(res.status).toBe(200);
    const raw = JSON.stringify(res.json);
    expect(Object.keys(res.json.answers as object)).toEqual(["__proto__", "Q 1/ü"]);
    expect(raw).toContain('"answers":{"__proto__":{"type":"noul","noul":');
  });

  it("keeps explicit zero usage at zero (and charges nothing)", async () => {
    const user = await freshUser();
    const res = await evaluate(gw.url, user.key, evaluation("judge-zero"));
    expect(res.status).toBe(200);
    expect(res.json.usage).toEqual({ input_tokens: 0, output_tokens: 0 });
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({ usage_source: "upstream", input_tokens: 0, output_tokens: 0, quota_charged: "0" });
  });

  it("counts the input itself when the evaluator reports no usage, marked estimated", async () => {
    const user = await freshUser("inference", "default");
    const body = evaluation("judge-silent");
    const res = await evaluate(gw.url, user.key, body);
    expect(res.status).toBe(200);
    const input = await new EvaluationTokens(body as unknown as SystemOneRequest).count();
    const usage = res.json.usage as { input_tokens: number; output_tokens: number };
    expect(usage.input_tokens).toBe(input);
    expect(Number.isInteger(usage.output_tokens) && usage.output_tokens > 0).toBe(true);
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({ usage_source: "estimated", input_tokens: input, quota_charged: String(input) });
  });
});

describe("aliases", () => {
  it("answers a reseller alias with the alias; an inference key does not know it", async () => {
    const reseller = await freshUser("reseller");
    await gw.services.resellers.credit(reseller.id, "1");
    const res = await evaluate(gw.url, reseller.key, evaluation("acme-judge"));
    expect(res.status).toBe(200);
    expect(res.json.model).toBe("acme-judge");
    await quiesce(gw);
    const [log] = await rowsOf(gw.db.pool, "select * from request_logs where request_id = $1", [res.headers.get("x-request-id")]);
    expect(log).toMatchObject({ public_model: "acme-judge", upstream_model: "1.13.0" });

    const inference = await freshUser();
    const refused = await evaluate(gw.url, inference.key, evaluation("acme-judge"));
    expect(refused.status).toBe(422);
    expect(refused.json.error).toMatchObject({ code: "model_not_found", param: "model" });
  });
});

describe("model lists", () => {
  it("GET /v1/models marks evaluation models with endpoints, aliases only for reseller keys", async () => {
    const list = async (key: string) => {
      const res = await fetch(`${gw.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
      return ((await res.json()) as { data: Record<string, unknown>[] }).data;
    };
    const inference = await list((await freshUser()).key);
    expect(inference.find((m) => m.id === "judge-1")).toMatchObject({ object: "model", endpoints: ["v1/systemone"] });
    expect(inference.find((m) => m.id === "chatty")).not.toHaveProperty("endpoints");
    expect(inference.map((m) => m.id)).not.toContain("acme-judge");
    const reseller = await list((await freshUser("reseller")).key);
    expect(reseller.find((m) => m.id === "acme-judge")).toMatchObject({ endpoints: ["v1/systemone"] });
  });

  it("GET /native/v1/models lists the evaluation models as {name, description, release_date}", async () => {
    const native = async (key: string) => {
      const res = await fetch(`${gw.url}/native/v1/models`, { headers: { authorization: `Bearer ${key}` } });
      expect(res.status).toBe(200);
      return (await res.json()) as { models: Record<string, unknown>[] };
    };
    const { models } = await native((await freshUser()).key);
    expect(models).toEqual([
      { name: "judge-1", description: "The evaluator, version 1.13", release_date: "2025-06-01" },
      { name: "judge-zero", description: "", release_date: null },
      { name: "judge-silent", description: "", release_date: null },
    ]);
    const reseller = await native((await freshUser("reseller")).key);
    expect(reseller.models.map((m) => m.name)).toContain("acme-judge");
    expect((await fetch(`${gw.url}/native/v1/models`)).status).toBe(401);
  });
});

describe("POST /v1/evaluate", () => {
  it("is gone: 404 naming /v1/systemone", async () => {
    const user = await freshUser();
    const res = await evaluate(gw.url, user.key, evaluation("judge-1"), "/v1/evaluate");
    expect(res.status).toBe(404);
    expect(res.json.error).toMatchObject({ code: "route_removed", param: null });
    expect((res.json.error as { message: string }).message).toContain("/v1/systemone");
  });
});
