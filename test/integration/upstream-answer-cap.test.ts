import { Writable } from "node:stream";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { createLogger } from "../../src/logger.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { quiesce } from "../helpers/metering-checks.js";
import { validateOpenAI } from "../helpers/openapi.js";

// limits.upstream_answer_bytes through the gateway: a chat answer over the cap is 502 upstream_answer_too_large
// in the error envelope, the next target is not tried, the hold is released with nothing charged, the request
// is logged, and none of the upstream's text reaches the client or the log.

const CAP = 16 * 1024;
const SECRET = "upstream-secret-detail";

let mock: MockUpstream;
/** Targets a and b: proxies in front of the mock that count what reaches them. */
let a: FaultProxy;
let b: FaultProxy;
let gw: TestGateway;
let key: string;
const logLines: string[] = [];

beforeAll(async () => {
  mock = await startMockUpstream();
  a = await startFaultProxy(mock.url);
  b = await startFaultProxy(mock.url);
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  gw = await startTestGateway({
    logger: createLogger("info", sink),
    config: {
      limits: { upstream_answer_bytes: { chat_completions: CAP } },
      providers: {
        a: { protocol: "openai", base_url: a.baseUrl(), api_key: "sk-provider-a" },
        b: { protocol: "openai", base_url: b.baseUrl(), api_key: "sk-provider-b" },
      },
      models: { "m-ab": { kind: "chat", upstream: "mock-gpt-small", targets: ["a", "b"] } },
      plans: { free: { daily_tokens: 10_000_000, context_limit: 128_000 } },
    },
  });
  await gw.services.auth.users.create({ email: "cap@example.test", password: "password-123" });
  key = (await gw.services.auth.apiKeys.create({ user: "cap@example.test" })).key;
});

afterAll(async () => {
  await gw?.close();
  await a?.close();
  await b?.close();
  await mock?.close();
});

beforeEach(() => {
  a.reset();
  b.reset();
});

async function chat() {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "m-ab", messages: [{ role: "user", content: "a long answer, please" }] }),
  });
  return { res, text: await res.text(), requestId: res.headers.get("x-request-id")! };
}

/** A chat completion whose JSON text is `bytes` long, with the secret in it. */
function answerOf(bytes: number): string {
  const text = JSON.stringify({ id: "chatcmpl-big", object: "chat.completion", created: 1, model: "x", choices: [], pad: SECRET });
  return text.replace(`"pad":"${SECRET}"`, `"pad":"${SECRET}${"a".repeat(bytes - text.length)}"`);
}

describe("an upstream answer over limits.upstream_answer_bytes", () => {
  it("is 502 upstream_answer_too_large, b is not tried, the hold is released and the request logged", async () => {
    a.respond = { status: 200, body: answerOf(CAP + 1) };
    const before = { a: a.requests.length, b: b.requests.length };
    const { res, text, requestId } = await chat();

    expect(res.status).toBe(502);
    const body = JSON.parse(text) as { error: { message: string; type: string; code: string; param: null; request_id: string } };
    expect(validateOpenAI("ErrorResponse", body)).toEqual([]);
    expect(body.error).toMatchObject({ type: "api_error", code: "upstream_answer_too_large", param: null, request_id: requestId });
    expect(body.error.message).toContain(`${CAP} bytes`);
    expect(text).not.toContain(SECRET);
    expect({ a: a.requests.length - before.a, b: b.requests.length - before.b }).toEqual({ a: 1, b: 0 });

    await quiesce(gw);
    const log = await gw.db.pool.query(
      "select provider, fallback_path, status, error_class, quota_charged::text as charged from request_logs where request_id = $1",
      [requestId],
    );
    expect(log.rows).toEqual([{ provider: null, fallback_path: ["a"], status: 502, error_class: "upstream_error", charged: "0" }]);
    const hold = await gw.db.pool.query("select status from quota_holds where request_id = $1", [requestId]);
    expect(hold.rows).toEqual([{ status: "voided" }]);
    const pending = await gw.db.pool.query<{ p: string }>("select coalesce(sum(debits_pending), 0)::text as p from quota_accounts");
    expect(pending.rows[0]!.p).toBe("0");

    const warning = logLines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.req_id === requestId && l.msg === "UPSTREAM_ANSWER_TOO_LARGE");
    expect(warning).toMatchObject({ provider: "a", reason: `upstream answer over ${CAP} bytes` });
    expect(logLines.join("")).not.toContain(SECRET);
  });

  it("an answer of exactly the cap is delivered", async () => {
    a.respond = { status: 200, body: answerOf(CAP) };
    const { res, text } = await chat();
    expect(res.status).toBe(200);
    expect(JSON.parse(text)).toMatchObject({ id: "chatcmpl-big", model: "m-ab" });
  });

  it("ordinary answers are untouched by the cap", async () => {
    const { res, text } = await chat();
    expect(res.status).toBe(200);
    expect(validateOpenAI("CreateChatCompletionResponse", JSON.parse(text))).toEqual([]);
  });
});
