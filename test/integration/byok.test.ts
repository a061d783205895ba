import { randomBytes } from "node:crypto";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatQuota } from "../../src/billing/chat-quota.js";
import { freePort } from "../../src/db/free-port.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { createLogger } from "../../src/logger.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { quiesce, rowsOf } from "../helpers/metering-checks.js";
import { jsonAnswer, startRecordingUpstream, type RecordingUpstream } from "../helpers/recording-upstream.js";

// Bring-your-own upstream keys (X-Upstream-Api-Key): the key reaches the upstream of every protocol in that
// vendor's header (the mock accepts only the client's key, never the operator's), only providers that opted in
// ever see it and fallback never carries it to another provider, a rejection is the client's 400, the request is
// metered at quota.byok_charge_ratio, and the key appears nowhere else: not in any log line, request-log or hold
// row, response header or body, error included.

const CLIENT_KEY = `sk-client-own-${randomBytes(12).toString("hex")}`;
const WRONG_KEY = `sk-client-wrong-${randomBytes(12).toString("hex")}`;
const MALFORMED = `Bearer sk-client-malformed-${randomBytes(12).toString("hex")}`;
const OPERATOR_KEY = "sk-operator-key";
const BYOK_RATIO = 0.5;

let ownMock: MockUpstream;
/** Providers that must never see a client's key: one that did not opt in, one opted in but second in line. */
let closed: RecordingUpstream;
let spare: RecordingUpstream;
let gw: TestGateway;
let key: string;
let userId: string;
const logLines: string[] = [];
/** Every status, header and body the gateway answered in this file. */
const seen: string[] = [];

const chatCompletion = {
  id: "chatcmpl-recorded",
  object: "chat.completion",
  created: 1,
  model: "m",
  choices: [{ index: 0, message: { role: "assistant", content: "from the spare provider" }, finish_reason: "stop" }],
  usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
};

beforeAll(async () => {
  ownMock = await startMockUpstream({ apiKey: CLIENT_KEY });
  // Nothing listens there: a retryable failure whichever key is sent.
  const deadPort = await freePort();
  closed = await startRecordingUpstream();
  spare = await startRecordingUpstream();
  closed.answers = [jsonAnswer(chatCompletion)];
  spare.answers = [jsonAnswer(chatCompletion)];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  const own = { api_key: OPERATOR_KEY, allow_byok: true };
  gw = await startTestGateway({
    logger: createLogger("trace", sink),
    config: {
      quota: { byok_charge_ratio: BYOK_RATIO },
      providers: {
        own: { protocol: "openai", base_url: ownMock.baseUrl, ...own },
        ownClaude: { protocol: "anthropic", base_url: ownMock.url, ...own },
        ownGemini: { protocol: "gemini", base_url: ownMock.url, ...own },
        ownDown: { protocol: "openai", base_url: `http://127.0.0.1:${deadPort}/v1`, ...own },
        closed: { protocol: "openai", base_url: `${closed.url}/v1`, api_key: OPERATOR_KEY },
        spare: { protocol: "openai", base_url: `${spare.url}/v1`, ...own },
      },
      models: {
        chat: { kind: "chat", upstream: "mock-gpt-small", targets: ["closed", "own"] },
        claude: { kind: "chat", upstream: "mock-claude", targets: ["ownClaude"] },
        gem: { kind: "chat", upstream: "mock-gemini", targets: ["ownGemini"] },
        embed: { kind: "embedding", upstream: "mock-embed", targets: ["own"] },
        pinned: { kind: "chat", upstream: "mock-gpt-small", targets: ["ownDown", "spare"] },
        "closed-only": { kind: "chat", upstream: "mock-gpt-small", targets: ["closed"] },
      },
      plans: { free: { daily_tokens: 1_000_000, context_limit: 128_000 }, tiny: { daily_tokens: 10, context_limit: 128_000 } },
    },
  });
  const user = await gw.services.auth.users.create({ email: "byok@example.test", password: "password-123" });
  userId = user.id;
  ({ key } = await gw.services.auth.apiKeys.create({ user: user.id }));
});

afterAll(async () => {
  await gw?.close();
  await closed?.close();
  await spare?.close();
  await ownMock?.close();
});

/** POSTs to the gateway with the client's own key (or `upstreamKey`), recording everything it answers. */
async function post(path: string, body: unknown, upstreamKey: string | null = CLIENT_KEY, gatewayKey = key) {
  const headers: Record<string, string> = { "content-type": "application/json", authorization: `Bearer ${gatewayKey}` };
  if (upstreamKey !== null) headers["x-upstream-api-key"] = upstreamKey;
  const res = await fetch(`${gw.url}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await res.text();
  seen.push(String(res.status), JSON.stringify([...res.headers]), text);
  return { status: res.status, text, requestId: res.headers.get("x-request-id")!, json: () => JSON.parse(text) as Record<string, unknown> };
}

const user = [{ role: "user", content: "Say hello with my own key" }];
const logRow = async (requestId: string) => (await rowsOf(gw.db.pool, "select * from request_logs where request_id = $1", [requestId]))[0]!;

describe("the client's own upstream key", () => {
  it("reaches the upstream of every protocol, in that vendor's header", async () => {
    const chat = await post("/v1/chat/completions", { model: "chat", messages: user });
    expect(chat.status).toBe(200);
    const stream = await post("/v1/chat/completions", { model: "chat", messages: user, stream: true });
    expect(stream.status).toBe(200);
    expect(stream.text).toContain("data: [DONE]");
    expect((await post("/v1/embeddings", { model: "embed", input: "hello" })).status).toBe(200);
    expect((await post("/v1/messages", { model: "claude", max_tokens: 50, messages: user })).status).toBe(200);
    const gemini = { contents: [{ role: "user", parts: [{ text: "Say hello with my own key" }] }] };
    expect((await post("/compatible/v1beta/models/gem:generateContent", gemini)).status).toBe(200);
    expect((await post("/compatible/v1beta/models/gem:streamGenerateContent?alt=sse", gemini)).status).toBe(200);
    // The provider that did not opt in came first in the chat model's targets, and saw nothing.
    expect(closed.requests).toEqual([]);
  });

  it("is metered at quota.byok_charge_ratio, and admission still applies", async () => {
    const res = await post("/v1/chat/completions", { model: "chat", messages: user });
    const usage = res.json().usage as { prompt_tokens: number; completion_tokens: number };
    await quiesce(gw);
    const expected = chatQuota(
      { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, cachedTokens: 0 },
      { completionRatio: 1, cachedRatio: 1, tokenMultiplier: 1, groupMultiplier: 1, byokRatio: BYOK_RATIO },
    );
    expect(await logRow(res.requestId)).toMatchObject({
      status: 200,
      provider: "own",
      quota_charged: String(expected),
      input_tokens: usage.prompt_tokens,
    });
    expect(expected).toBeGreaterThan(0n);

    await gw.services.auth.users.create({ email: "byok-tiny@example.test", password: "password-123", plan: "tiny" });
    const tinyKey = (await gw.services.auth.apiKeys.create({ user: "byok-tiny@example.test" })).key;
    const refused = await post("/v1/chat/completions", { model: "chat", messages: user }, CLIENT_KEY, tinyKey);
    expect(refused.status).toBe(429);
    expect(refused.json().error).toMatchObject({ code: "insufficient_quota" });
  });

  it("never falls back to another provider, even one that opted in", async () => {
    const res = await post("/v1/chat/completions", { model: "pinned", messages: user });
    expect(res.status).toBe(502);
    expect(spare.requests).toEqual([]);
    // Without the header, the same model falls back to the spare provider, with the operator's key.
    const operator = await post("/v1/chat/completions", { model: "pinned", messages: user }, null);
    expect(operator.status).toBe(200);
    expect(spare.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${OPERATOR_KEY}`]);
    spare.requests.length = 0;
  });

  it("rejected by the upstream is the client's 400, not a gateway 401 nor the operator's 502", async () => {
    const res = await post("/v1/messages", { model: "claude", max_tokens: 50, messages: user }, WRONG_KEY);
    expect(res.status).toBe(400);
    expect(res.json().error).toMatchObject({ type: "invalid_request_error", code: "upstream_key_rejected" });
    await quiesce(gw);
    expect(await logRow(res.requestId)).toMatchObject({ status: 400, error_class: "invalid_request", quota_charged: "0" });
  });

  it("is refused when malformed, or when no provider of the model accepts one", async () => {
    const malformed = await post("/v1/chat/completions", { model: "chat", messages: user }, MALFORMED);
    expect(malformed.status).toBe(400);
    expect(malformed.json().error).toMatchObject({ code: "invalid_upstream_key" });
    const empty = await post("/v1/chat/completions", { model: "chat", messages: user }, "");
    expect(empty.status).toBe(400);
    const notAccepted = await post("/v1/chat/completions", { model: "closed-only", messages: user });
    expect(notAccepted.status).toBe(400);
    expect(notAccepted.json().error).toMatchObject({ code: "upstream_key_not_accepted" });
    expect(closed.requests).toEqual([]);
  });

  it("appears nowhere else: logs, request-log and hold rows, responses and errors", async () => {
    await quiesce(gw);
    const rows = [
      ...(await rowsOf(gw.db.pool, "select row_to_json(r)::text as row from request_logs r where user_id = $1", [userId])),
      ...(await rowsOf(gw.db.pool, "select row_to_json(h)::text as row from quota_holds h", [])),
    ].map((r) => r.row as string);
    expect(rows.length).toBeGreaterThan(10);
    expect(logLines.length).toBeGreaterThan(10);
    for (const secret of [CLIENT_KEY, WRONG_KEY, MALFORMED, MALFORMED.slice("Bearer ".length)]) {
      for (const [where, texts] of Object.entries({ logs: logLines, rows, responses: seen })) {
        expect(
          texts.filter((t) => t.includes(secret)),
          `${where} hold a client key`,
        ).toEqual([]);
      }
    }
  });
});
