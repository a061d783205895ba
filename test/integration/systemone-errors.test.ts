import { setTimeout as sleep } from "node:timers/promises";
import { beforeAll, describe, expect, it } from "vitest";
import type { FaultProxy } from "../helpers/fault-proxy.js";
import type { TestGateway } from "../helpers/gateway-app.js";
import { rowsOf, settled } from "../helpers/metering-checks.js";
import { validateOpenAI } from "../helpers/openapi.js";
import { BAD_REQUESTS, evaluate, evaluation, evaluator, judge, useEvaluationGateway } from "../helpers/systemone.js";

// Refusals and failures of the evaluation service: every invalid request is 422 with its param and reaches no
// provider; the spec's status table (401, 403, 422, 429, 529, other 5xx); fallback on 5xx and invalid answers,
// never on 422; retry hints passed through; and every failure leaves the ledger with the hold voided,
// checked in the database.

let proxy: FaultProxy;
let gw: TestGateway;
let users = 0;

const fixture = useEvaluationGateway((proxy, mock) => ({
  providers: {
    main: evaluator(proxy),
    broken: evaluator(proxy, { "x-mock-status": 503 }),
    failing: evaluator(proxy, { "x-mock-status": 500 }),
    overloaded: evaluator(proxy, { "x-mock-status": 529, "x-mock-retry-after": 2, "x-mock-retry-after-ms": 1500 }),
    limited: evaluator(proxy, { "x-mock-status": 429, "x-mock-retry-after": 7 }),
    invalid: evaluator(proxy, { "x-mock-invalid-answer": "range" }),
    rejecting: evaluator(proxy, { "x-mock-status": 422 }),
    slow: evaluator(proxy, { "x-mock-delay-ms": 10_000 }),
    chat: { protocol: "openai", base_url: mock.baseUrl },
  },
  models: {
    judge: judge(["main"]),
    "judge-fallback": judge(["broken", "main"]),
    "judge-down": judge(["broken", "failing"]),
    "judge-overloaded": judge(["overloaded"]),
    "judge-limited": judge(["limited"]),
    "judge-busy": judge(["overloaded", "limited"]),
    "judge-invalid": judge(["invalid"]),
    "judge-invalid-fallback": judge(["invalid", "main"]),
    "judge-rejected": judge(["rejecting", "main"]),
    "judge-slow": judge(["slow"]),
    "judge-other": judge(["main"]),
    chatty: { kind: "chat", upstream: "mock-gpt-small", targets: ["chat"] },
  },
  plans: {
    basic: { daily_tokens: 1_000_000, context_limit: 100_000 },
    tiny: { daily_tokens: 5, context_limit: 100_000 },
    narrow: { daily_tokens: 1_000_000, context_limit: 100_000, models: ["judge"] },
  },
  default_plan: "basic",
}));
beforeAll(() => void ({ proxy, gw } = fixture));

async function freshUser(plan = "basic", models?: string[]) {
  const user = await gw.services.auth.users.create({ email: `eval-err-${++users}@example.test`, password: "password-123", plan });
  const { key } = await gw.services.auth.apiKeys.create({ user: user.id, models: models ?? null });
  return { id: user.id, key };
}

function expectEnvelope(res: { status: number; headers: Headers; json: Record<string, unknown> }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(validateOpenAI("ErrorResponse", res.json)).toEqual([]);
  const error = res.json.error as Record<string, unknown>;
  expect(error).toMatchObject({ code, request_id: res.headers.get("x-request-id") });
  expect(JSON.stringify(res.json)).not.toMatch(/upstream-secret-detail|mock/i);
  return error;
}

/** Asserts the user's only request held and then voided its reservation, and was logged with `status`. */
async function expectReleased(userId: string, status: number) {
  const s = await settled([gw], userId);
  expect(s.hold.status).toBe("voided");
  expect(BigInt(s.hold.amount as string)).toBeGreaterThan(0n);
  expect(s.account).toMatchObject({ debits_posted: "0", debits_pending: "0" });
  expect(s.log).toMatchObject({ status, quota_charged: "0" });
  return s;
}

const proxied = () => proxy.requests.length;

describe("invalid requests: 422 naming the field, never sent upstream, nothing held", () => {
  it.each(BAD_REQUESTS)("%s", async (_, body, param) => {
    const user = await freshUser();
    const before = proxied();
    const res = await evaluate(gw.url, user.key, JSON.stringify(body));
    const error = expectEnvelope(res, 422, "invalid_value");
    expect(error.param).toBe(param);
    expect(error.type).toBe("invalid_request_error");
    expect(proxied()).toBe(before);
    expect(await rowsOf(gw.db.pool, "select * from quota_accounts where user_id = $1", [user.id])).toEqual([]);
  });

  it("malformed JSON, an empty body, another content type, an unknown model and a chat model are 422 too", async () => {
    const user = await freshUser();
    expectEnvelope(await evaluate(gw.url, user.key, "{not json"), 422, "invalid_json");
    expectEnvelope(await evaluate(gw.url, user.key, ""), 422, "invalid_json");
    expectEnvelope(
      await evaluate(gw.url, user.key, JSON.stringify(evaluation("judge")), "/v1/systemone", { "content-type": "text/plain" }),
      422,
      "unsupported_media_type",
    );
    expect(expectEnvelope(await evaluate(gw.url, user.key, evaluation("nope")), 422, "model_not_found").param).toBe("model");
    expect(expectEnvelope(await evaluate(gw.url, user.key, evaluation("chatty")), 422, "model_not_supported").param).toBe("model");
  });
});

describe("credentials and access", () => {
  it("401 without or with a bad key, 403 for a model the plan or the key excludes", async () => {
    const noKey = await fetch(`${gw.url}/v1/systemone`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(evaluation("judge")),
    });
    expect(noKey.status).toBe(401);
    expectEnvelope(await evaluate(gw.url, "gw_not_a_key", evaluation("judge")), 401, "invalid_api_key");
    const narrow = await freshUser("narrow");
    expectEnvelope(await evaluate(gw.url, narrow.key, evaluation("judge-other")), 403, "model_not_allowed");
    const restricted = await freshUser("basic", ["judge"]);
    expectEnvelope(await evaluate(gw.url, restricted.key, evaluation("judge-other"), "/native/v1/systemone"), 403, "model_not_allowed");
  });

  it("429 insufficient_quota when the day's allowance cannot hold the request", async () => {
    const user = await freshUser("tiny");
    const res = await evaluate(gw.url, user.key, evaluation("judge"));
    expectEnvelope(res, 429, "insufficient_quota");
    expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});

describe("upstream failures", () => {
  it("falls back to the next target on 5xx", async () => {
    const user = await freshUser();
    const before = proxied();
    const res = await evaluate(gw.url, user.key, evaluation("judge-fallback"));
    expect(res.status).toBe(200);
    expect(proxy.requests.slice(before).map((r) => r.faults["x-mock-status"])).toEqual(["503", undefined]);
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({ status: 200, provider: "main", fallback_path: ["broken"] });
  });

  it("answers 502 in the envelope when every target fails, the hold released", async () => {
    const user = await freshUser();
    const res = await evaluate(gw.url, user.key, evaluation("judge-down"));
    expectEnvelope(res, 502, "upstream_error");
    const s = await expectReleased(user.id, 502);
    expect(s.log).toMatchObject({ error_class: "upstream_error", fallback_path: ["broken", "failing"] });
  });

  it("answers 529 with Retry-After and retry-after-ms passed through, the hold released", async () => {
    const user = await freshUser();
    const res = await evaluate(gw.url, user.key, evaluation("judge-overloaded"));
    expect(expectEnvelope(res, 529, "upstream_overloaded").type).toBe("overloaded_error");
    expect(res.headers.get("retry-after")).toBe("2");
    expect(res.headers.get("retry-after-ms")).toBe("1500");
    await expectReleased(user.id, 529);
  });

  it("answers 429 with the last target's Retry-After after trying every target", async () => {
    const limited = await freshUser();
    const res = await evaluate(gw.url, limited.key, evaluation("judge-limited"));
    expectEnvelope(res, 429, "upstream_rate_limited");
    expect(res.headers.get("retry-after")).toBe("7");
    await expectReleased(limited.id, 429);
    const busy = await freshUser();
    const both = await evaluate(gw.url, busy.key, evaluation("judge-busy"));
    expectEnvelope(both, 429, "upstream_rate_limited");
    expect(both.headers.get("retry-after")).toBe("7");
    expect(both.headers.get("retry-after-ms")).toBeNull();
  });

  it("answers an invalid answer with 502, the hold released; the next target is tried first", async () => {
    const user = await freshUser();
    const res = await evaluate(gw.url, user.key, evaluation("judge-invalid"));
    expectEnvelope(res, 502, "upstream_error");
    expect((res.json.error as { message: string }).message).toContain("invalid response");
    await expectReleased(user.id, 502);
    const other = await freshUser();
    expect((await evaluate(gw.url, other.key, evaluation("judge-invalid-fallback"))).status).toBe(200);
  });

  it("answers an upstream 422 with 422 and never tries another provider", async () => {
    const user = await freshUser();
    const before = proxied();
    const res = await evaluate(gw.url, user.key, evaluation("judge-rejected"));
    expectEnvelope(res, 422, "upstream_invalid_request");
    expect(proxy.requests.slice(before).map((r) => r.faults["x-mock-status"])).toEqual(["422"]);
    await expectReleased(user.id, 422);
  });

  it("releases the hold when the client cancels before delivery, and cancels the upstream call", async () => {
    const user = await freshUser();
    const before = proxied();
    const abort = new AbortController();
    const pending = fetch(`${gw.url}/v1/systemone`, {
      method: "POST",
      headers: { authorization: `Bearer ${user.key}`, "content-type": "application/json" },
      body: JSON.stringify(evaluation("judge-slow")),
      signal: abort.signal,
    }).catch((err: unknown) => err);
    while (proxied() === before) await sleep(10);
    abort.abort();
    expect(await pending).toBeInstanceOf(Error);
    const s = await expectReleased(user.id, 499);
    expect(s.log.error_class).toBe("client_cancelled");
    while (!proxy.requests[before]!.done) await sleep(10);
    expect(proxy.requests[before]!.abortedByGateway).toBe(true);
  });
});
