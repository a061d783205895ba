import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { countTextTokens } from "../../src/metering/estimate.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { countLogWrites, settled } from "../helpers/metering-checks.js";
import { sseAnswer, startRecordingUpstream, type RecordingUpstream } from "../helpers/recording-upstream.js";

// Issue 20, item 13: an upstream that ignores the request's output limit. The gateway counts what it relays
// and ends the stream normally, in the protocol's own terms, once the output passes the limit by more than
// the larger of 10% and 64 tokens; it bills what was delivered.

const WORDS = 3000;
const LIMIT = 100;
/** LIMIT + max(10% of it, 64). */
const CAP = LIMIT + 64;
/** The relay may deliver one counting step past the cap (src/metering/relays/output-cap.ts). */
const SLACK = 20;
const word = " hello";

const data = (payload: object) => `data: ${JSON.stringify(payload)}\n\n`;
const typed = (payload: Record<string, unknown>) => `event: ${payload.type as string}\ndata: ${JSON.stringify(payload)}\n\n`;
const many = (make: (i: number) => string) => Array.from({ length: WORDS }, (_, i) => make(i)).join("");

const chatChunk = (delta: object, finish: string | null = null) =>
  data({
    id: "chatcmpl-x",
    object: "chat.completion.chunk",
    created: 1,
    model: "up",
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
const chatStream =
  chatChunk({ role: "assistant", content: "" }) +
  many(() => chatChunk({ content: word })) +
  chatChunk({}, "stop") +
  data({
    id: "chatcmpl-x",
    object: "chat.completion.chunk",
    created: 1,
    model: "up",
    choices: [],
    usage: { prompt_tokens: 5, completion_tokens: WORDS, total_tokens: WORDS + 5 },
  }) +
  "data: [DONE]\n\n";

const response = { id: "resp_x", object: "response", created_at: 1, model: "up", status: "in_progress", output: [] };
const responsesStream =
  typed({ type: "response.created", sequence_number: 0, response }) +
  many((i) =>
    typed({ type: "response.output_text.delta", sequence_number: i + 1, item_id: "msg_x", output_index: 0, content_index: 0, delta: word }),
  ) +
  typed({
    type: "response.completed",
    sequence_number: WORDS + 1,
    response: { ...response, status: "completed", usage: { input_tokens: 5, output_tokens: WORDS, total_tokens: WORDS + 5 } },
  });

const messagesStream =
  typed({
    type: "message_start",
    message: {
      id: "msg_x",
      type: "message",
      role: "assistant",
      model: "up",
      content: [],
      stop_reason: null,
      usage: { input_tokens: 5, output_tokens: 1 },
    },
  }) +
  typed({ type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }) +
  many(() => typed({ type: "content_block_delta", index: 0, delta: { type: "text_delta", text: word } })) +
  typed({ type: "content_block_stop", index: 0 }) +
  typed({ type: "message_delta", delta: { stop_reason: "end_turn", stop_sequence: null }, usage: { output_tokens: WORDS } }) +
  typed({ type: "message_stop" });

const geminiChunk = (extra: object = {}) =>
  data({ candidates: [{ content: { role: "model", parts: [{ text: word }] }, index: 0, ...extra }], modelVersion: "up" });
const geminiStream =
  many(() => geminiChunk()) +
  data({
    candidates: [{ content: { role: "model", parts: [{ text: "" }] }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 5, candidatesTokenCount: WORDS, totalTokenCount: WORDS + 5 },
    modelVersion: "up",
  });

let upstream: RecordingUpstream;
let gw: TestGateway;
let seq = 0;

beforeAll(async () => {
  upstream = await startRecordingUpstream();
  gw = await startTestGateway({
    config: {
      providers: {
        oai: { protocol: "openai", base_url: `${upstream.url}/v1` },
        ant: { protocol: "anthropic", base_url: upstream.url },
        gem: { protocol: "gemini", base_url: upstream.url },
      },
      models: {
        chat: { kind: "chat", upstream: "up", targets: ["oai"] },
        claude: { kind: "chat", upstream: "up", targets: ["ant"] },
        gemini: { kind: "chat", upstream: "up", targets: ["gem"] },
        // No limit in the request: the model's own maximum applies.
        "chat-max": { kind: "chat", upstream: "up", targets: ["oai"], max_output_tokens: LIMIT },
      },
      plans: { basic: { daily_tokens: 100_000_000, context_limit: 100_000 } },
      default_plan: "basic",
    },
  });
  countLogWrites(gw);
});

afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

async function stream(path: string, body: object, answer: string) {
  upstream.answers = [sseAnswer(answer)];
  const user = await gw.services.auth.users.create({ email: `cap-${++seq}@example.test`, password: "password-123456" });
  const { key } = await gw.services.auth.apiKeys.create({ user: user.id });
  const res = await fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  const text = await res.text();
  // The charge comment (docs/api.md, "Charges") is no event.
  const events = text
    .split("\n\n")
    .filter((frame) => frame && !frame.startsWith(":"))
    .map((frame) => {
      const name = /^event: (.*)$/m.exec(frame)?.[1];
      const payload = /^data: (.*)$/m.exec(frame)![1]!;
      return { name, data: payload === "[DONE]" ? null : (JSON.parse(payload) as Record<string, unknown>) };
    });
  const s = await settled([gw], user.id);
  return { events, log: s.log };
}

/** What was delivered is past the cap by at most a counting step, and billed by the local count. */
async function expectCapped(delivered: number, log: Record<string, unknown>) {
  expect(delivered).toBeGreaterThan(LIMIT);
  expect(delivered).toBeLessThanOrEqual(CAP + SLACK);
  expect(log).toMatchObject({ status: 200, error_code: null, usage_source: "estimated" });
  expect(Number(log.output_tokens)).toBe(await countTextTokens(word.repeat(delivered)));
  expect(Number(log.output_tokens)).toBeLessThanOrEqual(CAP + SLACK);
}

describe("a stream whose upstream ignores its output limit (issue 20, item 13)", () => {
  const chatBody = (model: string, extra: object = {}) => ({
    model,
    messages: [{ role: "user", content: "Talk" }],
    stream: true,
    stream_options: { include_usage: true },
    ...extra,
  });

  for (const [name, model, extra] of [
    ["max_tokens", "chat", { max_tokens: LIMIT }],
    ["the model's max_output_tokens", "chat-max", {}],
  ] as const) {
    it(`/v1/chat/completions (${name}): finish_reason length, the usage chunk, [DONE]`, async () => {
      const { events, log } = await stream("/v1/chat/completions", chatBody(model, extra), chatStream);
      const deltas = events.filter(
        (e) => (e.data?.choices as { delta?: { content?: string } }[] | undefined)?.[0]?.delta?.content === word,
      );
      expect(events.at(-1)!.data).toBeNull();
      const usage = events.at(-2)!.data!;
      expect(usage.usage).toMatchObject({ completion_tokens: Number(log.output_tokens) });
      expect(events.at(-3)!.data!.choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: "length" }]);
      await expectCapped(deltas.length, log);
    });
  }

  it("/v1/responses: response.incomplete with reason max_output_tokens", async () => {
    const { events, log } = await stream(
      "/v1/responses",
      { model: "chat", input: "Talk", stream: true, max_output_tokens: LIMIT },
      responsesStream,
    );
    const deltas = events.filter((e) => e.name === "response.output_text.delta");
    const last = events.at(-1)!;
    expect(last.name).toBe("response.incomplete");
    expect(last.data!.response).toMatchObject({
      status: "incomplete",
      incomplete_details: { reason: "max_output_tokens" },
      model: "chat",
      usage: { output_tokens: Number(log.output_tokens) },
    });
    await expectCapped(deltas.length, log);
  });

  for (const [model, answer] of [
    ["claude", messagesStream],
    ["chat", chatStream],
  ] as const) {
    it(`/v1/messages (${model === "claude" ? "native" : "translated from chat"}): message_delta max_tokens, message_stop`, async () => {
      const { events, log } = await stream(
        "/v1/messages",
        { model, max_tokens: LIMIT, messages: [{ role: "user", content: "Talk" }], stream: true },
        answer,
      );
      const deltas = events.filter((e) => e.name === "content_block_delta");
      expect(events.map((e) => e.name).slice(-3)).toEqual(["content_block_stop", "message_delta", "message_stop"]);
      expect(events.at(-2)!.data).toMatchObject({
        delta: { stop_reason: "max_tokens" },
        usage: { output_tokens: Number(log.output_tokens) },
      });
      await expectCapped(deltas.length, log);
    });
  }

  for (const [model, answer] of [
    ["gemini", geminiStream],
    ["chat", chatStream],
  ] as const) {
    it(`streamGenerateContent (${model === "gemini" ? "native" : "translated from chat"}): a last chunk with MAX_TOKENS`, async () => {
      const { events, log } = await stream(
        `/compatible/v1beta/models/${model}:streamGenerateContent?alt=sse`,
        { contents: [{ role: "user", parts: [{ text: "Talk" }] }], generationConfig: { maxOutputTokens: LIMIT } },
        answer,
      );
      const texts = events.filter(
        (e) => (e.data?.candidates as { content?: { parts?: { text?: string }[] } }[] | undefined)?.[0]?.content?.parts?.[0]?.text === word,
      );
      const last = events.at(-1)!.data!;
      expect(last.candidates).toMatchObject([{ finishReason: "MAX_TOKENS" }]);
      expect(last.usageMetadata).toMatchObject({ candidatesTokenCount: Number(log.output_tokens) });
      await expectCapped(texts.length, log);
    });
  }
});
