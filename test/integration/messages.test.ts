import Anthropic, { APIError, AuthenticationError, BadRequestError, InternalServerError, NotFoundError, RateLimitError } from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatQuota } from "../../src/billing/chat-quota.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { convertMessagesToChat } from "../../src/providers/anthropic/convert-messages-to-chat.js";
import { anthropicMessagesRequestSchema } from "../../src/providers/anthropic/messages-request-schema.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { countLogWrites, settled } from "../helpers/metering-checks.js";
import { readSse } from "../helpers/mock-upstream-client.js";
import { validateAnthropic } from "../helpers/openapi.js";

// POST /messages and /v1/messages through the official Anthropic SDK (baseURL = the gateway root): JSON and the
// event stream, native to an anthropic provider and translated to and from an openai one, with the usage billed
// once and shown to the client, fallback across protocols, streams dropped midway, and how the SDK surfaces
// the gateway's errors.

const MOCK_KEY = "mock-upstream-key";
const RATES = { tokenMultiplier: 1, completionRatio: 3, cachedRatio: 1, groupMultiplier: 1 };
let mock: MockUpstream;
let proxy: FaultProxy;
let gw: TestGateway;
let key: string;
let client: Anthropic;
let directClaude: Anthropic;
let directChat: OpenAI;
let userSeq = 0;

beforeAll(async () => {
  mock = await startMockUpstream({ apiKey: MOCK_KEY });
  proxy = await startFaultProxy(mock.url);
  // The proxy's base URLs end in /v1, as an openai provider's do; an anthropic provider's base_url is the root.
  const root = (faults: Record<string, string | number>) => proxy.baseUrl(faults).replace(/\/v1$/, "");
  const via = (provider: string, model: string) => ({ provider, model });
  gw = await startTestGateway({
    config: {
      providers: {
        claude: { protocol: "anthropic", base_url: mock.url, api_key: MOCK_KEY },
        chat: { protocol: "openai", base_url: mock.baseUrl, api_key: MOCK_KEY },
        chatNoUsage: { protocol: "openai", base_url: mock.baseUrl, api_key: MOCK_KEY, stream_usage: false },
        claudeDown: { protocol: "anthropic", base_url: root({ "x-mock-status": 503 }), api_key: MOCK_KEY },
        chatDown: { protocol: "openai", base_url: proxy.baseUrl({ "x-mock-status": 503 }), api_key: MOCK_KEY },
        claudeDropping: { protocol: "anthropic", base_url: root({ "x-mock-drop-after": 2 }), api_key: MOCK_KEY },
        chatDropping: { protocol: "openai", base_url: proxy.baseUrl({ "x-mock-drop-after": 2 }), api_key: MOCK_KEY },
        gemini: { protocol: "gemini", base_url: mock.url, api_key: MOCK_KEY },
      },
      models: {
        claude: { kind: "chat", upstream: "mock-claude", targets: ["claude"], completion_ratio: 3 },
        "claude-chat": { kind: "chat", upstream: "mock-gpt-small", targets: ["chat"], completion_ratio: 3 },
        "claude-chat-no-usage": { kind: "chat", upstream: "mock-gpt-small", targets: ["chatNoUsage"], completion_ratio: 3 },
        "to-chat": { kind: "chat", upstream: "mock-claude", targets: ["claudeDown", via("chat", "mock-gpt-small")], completion_ratio: 3 },
        "to-native": { kind: "chat", upstream: "mock-claude", targets: [via("chatDown", "mock-gpt-small"), "claude"], completion_ratio: 3 },
        "claude-drop": { kind: "chat", upstream: "mock-claude", targets: ["claudeDropping"] },
        "chat-drop": { kind: "chat", upstream: "mock-gpt-small", targets: ["chatDropping"] },
        "all-down": { kind: "chat", upstream: "mock-claude", targets: ["claudeDown"] },
        gem: { kind: "chat", upstream: "mock-gemini", targets: ["gemini"] },
      },
      plans: { free: { daily_tokens: 1_000_000, context_limit: 128_000 }, tiny: { daily_tokens: 10, context_limit: 128_000 } },
    },
  });
  countLogWrites(gw);
  directClaude = new Anthropic({ apiKey: MOCK_KEY, baseURL: mock.url, maxRetries: 0 });
  directChat = new OpenAI({ apiKey: MOCK_KEY, baseURL: mock.baseUrl, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await proxy?.close();
  await mock?.close();
});

async function freshUser(plan = "free") {
  const user = await gw.services.auth.users.create({ email: `messages-${++userSeq}@example.test`, password: "password-123", plan });
  ({ key } = await gw.services.auth.apiKeys.create({ user: user.id }));
  // The SDK sends the key as x-api-key and appends /v1/messages to the gateway root.
  client = new Anthropic({ apiKey: key, baseURL: gw.url, maxRetries: 0 });
  return user.id;
}

const hello = {
  max_tokens: 200,
  system: "You are terse.",
  messages: [{ role: "user" as const, content: "Say hello to the messages route" }],
};

/** What the chat upstream answers to the translation of `request`: the translated answer must say the same. */
async function chatAnswer(request: typeof hello & { model: string }) {
  const chat = convertMessagesToChat(anthropicMessagesRequestSchema.parse(request));
  const answer = await directChat.chat.completions.create({ ...chat, model: "mock-gpt-small", stream: false } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  return { text: answer.choices[0]!.message.content!, usage: answer.usage! };
}

const textOf = (message: Anthropic.Message) => message.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("");

const charge = (prompt: number, completion: number) => String(chatQuota({ promptTokens: prompt, completionTokens: completion, cachedTokens: 0 }, RATES));

describe("POST /v1/messages, native to an anthropic provider", () => {
  it("answers a Message with the public model id and bills its usage once", async () => {
    const userId = await freshUser();
    const answer = await client.messages.create({ model: "claude", ...hello });
    const expected = await directClaude.messages.create({ model: "mock-claude", ...hello });
    expect(validateAnthropic("Message", answer)).toEqual([]);
    expect(answer.model).toBe("claude");
    expect(textOf(answer)).toBe(textOf(expected));
    expect(answer.usage).toEqual(expected.usage);
    const s = await settled([gw], userId);
    expect(s.log).toMatchObject({
      route: "/messages",
      client_protocol: "anthropic",
      provider: "claude",
      status: 200,
      usage_source: "upstream",
      input_tokens: expected.usage.input_tokens,
      output_tokens: expected.usage.output_tokens,
      quota_charged: charge(expected.usage.input_tokens, expected.usage.output_tokens),
      streamed: false,
    });
  });

  it("streams the full event sequence and bills message_delta's cumulative output", async () => {
    const userId = await freshUser();
    const stream = client.messages.stream({ model: "claude", ...hello });
    const events: Anthropic.MessageStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    for (const event of events) expect(validateAnthropic("MessageStreamEvent", event), event.type).toEqual([]);
    // (The SDK's iterator leaves out the ping the provider sends after content_block_start.)
    expect(events.map((e) => e.type).filter((t) => t !== "content_block_delta")).toEqual([
      "message_start",
      "content_block_start",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    const final = await stream.finalMessage();
    const expected = await directClaude.messages.create({ model: "mock-claude", ...hello });
    expect(final.model).toBe("claude");
    expect(textOf(final)).toBe(textOf(expected));
    expect(final.usage.output_tokens).toBe(expected.usage.output_tokens);
    const s = await settled([gw], userId);
    expect(s.log).toMatchObject({
      status: 200,
      usage_source: "upstream",
      streamed: true,
      quota_charged: charge(expected.usage.input_tokens, expected.usage.output_tokens),
    });
  });

  it("is the same handler at /messages, with x-api-key or a bearer key", async () => {
    await freshUser();
    const credentials: Record<string, string>[] = [{ "x-api-key": key }, { authorization: `Bearer ${key}` }];
    for (const headers of credentials) {
      const res = await fetch(`${gw.url}/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ model: "claude", ...hello }),
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as Anthropic.Message).model).toBe("claude");
    }
  });
});

describe("POST /v1/messages, translated to an openai provider", () => {
  it("answers a Message saying what the chat upstream said, with its usage, billed once", async () => {
    const userId = await freshUser();
    const answer = await client.messages.create({ model: "claude-chat", ...hello });
    const expected = await chatAnswer({ model: "claude-chat", ...hello });
    expect(validateAnthropic("Message", answer)).toEqual([]);
    expect(answer.model).toBe("claude-chat");
    expect(textOf(answer)).toBe(expected.text);
    expect(answer.usage).toMatchObject({ input_tokens: expected.usage.prompt_tokens, output_tokens: expected.usage.completion_tokens });
    const s = await settled([gw], userId);
    expect(s.log).toMatchObject({
      provider: "chat",
      usage_source: "upstream",
      input_tokens: expected.usage.prompt_tokens,
      output_tokens: expected.usage.completion_tokens,
      quota_charged: charge(expected.usage.prompt_tokens, expected.usage.completion_tokens),
    });
  });

  it("streams the chat answer as Anthropic events, message_delta carrying the billed usage", async () => {
    const userId = await freshUser();
    const res = await fetch(`${gw.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": key },
      body: JSON.stringify({ model: "claude-chat", ...hello, stream: true }),
    });
    const { events, broken } = await readSse(res);
    expect(broken).toBe(false);
    for (const e of events) {
      const data = JSON.parse(e.data) as Anthropic.MessageStreamEvent;
      expect(e.event).toBe(data.type);
      expect(validateAnthropic("MessageStreamEvent", data), data.type).toEqual([]);
    }
    const final = await client.messages.stream({ model: "claude-chat", ...hello }).finalMessage();
    const expected = await chatAnswer({ model: "claude-chat", ...hello });
    expect(textOf(final)).toBe(expected.text);
    expect(final.usage).toMatchObject({ input_tokens: expected.usage.prompt_tokens, output_tokens: expected.usage.completion_tokens });
    const s = await settled([gw], userId, 2);
    for (const log of s.logs) {
      expect(log).toMatchObject({ streamed: true, usage_source: "upstream", quota_charged: charge(expected.usage.prompt_tokens, expected.usage.completion_tokens) });
    }
  });

  it("without upstream usage, shows and bills the same local count", async () => {
    const userId = await freshUser();
    const final = await client.messages.stream({ model: "claude-chat-no-usage", ...hello }).finalMessage();
    const s = await settled([gw], userId);
    expect(s.log).toMatchObject({ usage_source: "estimated", input_tokens: final.usage.input_tokens, output_tokens: final.usage.output_tokens });
    expect(final.usage.output_tokens).toBeGreaterThan(0);
    expect(s.log.quota_charged).toBe(charge(final.usage.input_tokens, final.usage.output_tokens));
  });
});

describe("fallback across protocols", () => {
  it("anthropic target down → the chat target answers, translated", async () => {
    const userId = await freshUser();
    const answer = await client.messages.create({ model: "to-chat", ...hello });
    expect(textOf(answer)).toBe((await chatAnswer({ model: "to-chat", ...hello })).text);
    const s = await settled([gw], userId);
    expect(s.log).toMatchObject({ provider: "chat", fallback_path: ["claudeDown"], status: 200 });
  });

  it("chat target down → the anthropic target answers natively, streaming too", async () => {
    const userId = await freshUser();
    const expected = textOf(await directClaude.messages.create({ model: "mock-claude", ...hello }));
    expect(textOf(await client.messages.create({ model: "to-native", ...hello }))).toBe(expected);
    expect(textOf(await client.messages.stream({ model: "to-native", ...hello }).finalMessage())).toBe(expected);
    const s = await settled([gw], userId, 2);
    for (const log of s.logs) expect(log).toMatchObject({ provider: "claude", fallback_path: ["chatDown"], status: 200 });
  });
});

describe("streams dropped midway", () => {
  it.each(["claude-drop", "chat-drop"])("%s: the SDK raises the in-band error; billed once for what was delivered", async (model) => {
    const userId = await freshUser();
    const stream = client.messages.stream({ model, ...hello });
    const err = await stream.finalMessage().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).type).toBe("api_error");
    expect((err as APIError).message).toContain("The upstream stream ended unexpectedly.");
    const s = await settled([gw], userId);
    expect(s.log).toMatchObject({ status: 200, error_class: "upstream_error", usage_source: "estimated" });
    expect(BigInt(s.log.quota_charged as string)).toBeGreaterThan(0n);
  });
});

describe("errors as the Anthropic SDK surfaces them", () => {
  /** The SDK call's rejection. */
  const failure = (call: Promise<unknown>) =>
    call.then(
      () => expect.fail("the call succeeded"),
      (e: unknown) => e as APIError,
    );

  it("gives the status, the error type and the gateway's message", async () => {
    await freshUser();
    const wrongKey = new Anthropic({ apiKey: "gw_wrong", baseURL: gw.url, maxRetries: 0 });
    const cases: [() => Promise<unknown>, new (...args: never[]) => APIError, number, string][] = [
      [() => wrongKey.messages.create({ model: "claude", ...hello }), AuthenticationError, 401, "Invalid or revoked API key"],
      [() => client.messages.create({ model: "nope", ...hello }), NotFoundError, 404, "The model 'nope' does not exist"],
      [() => client.messages.create({ model: "claude", ...hello, max_tokens: 0 }), BadRequestError, 400, "Invalid max_tokens"],
      [() => client.messages.create({ model: "gem", ...hello }), BadRequestError, 400, "served over the gemini protocol"],
      [() => client.messages.create({ model: "all-down", ...hello }), InternalServerError, 502, "The upstream provider answered 503"],
    ];
    for (const [call, kind, status, message] of cases) {
      const err = await failure(call());
      expect(err, message).toBeInstanceOf(kind);
      expect(err.status).toBe(status);
      expect(err.apiMessage).toContain(message);
      expect(err.message).toContain(message);
      expect(err.message).not.toContain("upstream-secret-detail");
    }
  });

  it("an exhausted quota is a RateLimitError with Retry-After", async () => {
    await freshUser("tiny");
    const err = await failure(client.messages.create({ model: "claude", ...hello }));
    expect(err).toBeInstanceOf(RateLimitError);
    expect(err.type).toBe("rate_limit_error");
    expect(Number(err.headers?.get("retry-after"))).toBeGreaterThan(0);
  });
});
