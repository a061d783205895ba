import Anthropic, {
  APIError,
  AuthenticationError,
  BadRequestError,
  InternalServerError,
  NotFoundError,
  RateLimitError,
} from "@anthropic-ai/sdk";
import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { convertMessagesToChat } from "../../src/providers/anthropic/convert-messages-to-chat.js";
import { anthropicMessagesRequestSchema } from "../../src/providers/anthropic/messages-request-schema.js";
import { settled } from "../helpers/metering-checks.js";
import { validateAnthropic } from "../helpers/openapi.js";
import { charge, MOCK_KEY, startProtocolGateway, type ProtocolGateway } from "../helpers/protocol-gateway.js";
import { readSse } from "../helpers/sse-frames.js";

// POST /messages and /v1/messages through the official Anthropic SDK (baseURL = the gateway root): JSON and the
// event stream, native to an anthropic provider and translated to and from an openai one, with the usage billed
// once and shown to the client, fallback across protocols, streams dropped midway, and how the SDK surfaces
// the gateway's errors.

let pg: ProtocolGateway;
let key: string;
let client: Anthropic;
let directClaude: Anthropic;

beforeAll(async () => {
  pg = await startProtocolGateway("anthropic");
  directClaude = new Anthropic({ apiKey: MOCK_KEY, baseURL: pg.mock.url, maxRetries: 0 });
});

afterAll(async () => {
  await pg?.close();
});

async function freshUser(plan = "free") {
  const { userId, key: created } = await pg.newKey(plan);
  key = created;
  // The SDK sends the key as x-api-key and appends /v1/messages to the gateway root.
  client = new Anthropic({ apiKey: key, baseURL: pg.gw.url, maxRetries: 0 });
  return userId;
}

const hello = {
  max_tokens: 200,
  system: "You are terse.",
  messages: [{ role: "user" as const, content: "Say hello to the messages route" }],
};

/** What the chat upstream answers to the translation of `request`: the translated answer must say the same. */
async function chatAnswer(request: typeof hello & { model: string }) {
  const chat = convertMessagesToChat(anthropicMessagesRequestSchema.parse(request));
  const answer = await pg.directChat.chat.completions.create({
    ...chat,
    model: "mock-gpt-small",
    stream: false,
  } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  return { text: answer.choices[0]!.message.content!, usage: answer.usage! };
}

const textOf = (message: Anthropic.Message) => message.content.flatMap((b) => (b.type === "text" ? [b.text] : [])).join("");

describe("POST /v1/messages, native to an anthropic provider", () => {
  it("answers a Message with the public model id and bills its usage once", async () => {
    const userId = await freshUser();
    const answer = await client.messages.create({ model: "native", ...hello });
    const expected = await directClaude.messages.create({ model: "mock-claude", ...hello });
    expect(validateAnthropic("Message", answer)).toEqual([]);
    expect(answer.model).toBe("native");
    expect(textOf(answer)).toBe(textOf(expected));
    expect(answer.usage).toEqual(expected.usage);
    const s = await settled([pg.gw], userId);
    expect(s.log).toMatchObject({
      route: "/messages",
      client_protocol: "anthropic",
      provider: "native",
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
    const stream = client.messages.stream({ model: "native", ...hello });
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
    expect(final.model).toBe("native");
    expect(textOf(final)).toBe(textOf(expected));
    expect(final.usage.output_tokens).toBe(expected.usage.output_tokens);
    const s = await settled([pg.gw], userId);
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
      const res = await fetch(`${pg.gw.url}/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ model: "native", ...hello }),
      });
      expect(res.status).toBe(200);
      expect(((await res.json()) as Anthropic.Message).model).toBe("native");
    }
  });
});

describe("POST /v1/messages, translated to an openai provider", () => {
  it("answers a Message saying what the chat upstream said, with its usage, billed once", async () => {
    const userId = await freshUser();
    const answer = await client.messages.create({ model: "org/chat", ...hello });
    const expected = await chatAnswer({ model: "org/chat", ...hello });
    expect(validateAnthropic("Message", answer)).toEqual([]);
    expect(answer.model).toBe("org/chat");
    expect(textOf(answer)).toBe(expected.text);
    expect(answer.usage).toMatchObject({ input_tokens: expected.usage.prompt_tokens, output_tokens: expected.usage.completion_tokens });
    const s = await settled([pg.gw], userId);
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
    const res = await fetch(`${pg.gw.url}/v1/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": key },
      body: JSON.stringify({ model: "org/chat", ...hello, stream: true }),
    });
    const { events, broken } = await readSse(res);
    expect(broken).toBe(false);
    for (const e of events) {
      const data = JSON.parse(e.data) as Anthropic.MessageStreamEvent;
      expect(e.event).toBe(data.type);
      expect(validateAnthropic("MessageStreamEvent", data), data.type).toEqual([]);
    }
    const final = await client.messages.stream({ model: "org/chat", ...hello }).finalMessage();
    const expected = await chatAnswer({ model: "org/chat", ...hello });
    expect(textOf(final)).toBe(expected.text);
    expect(final.usage).toMatchObject({ input_tokens: expected.usage.prompt_tokens, output_tokens: expected.usage.completion_tokens });
    const s = await settled([pg.gw], userId, 2);
    for (const log of s.logs) {
      expect(log).toMatchObject({
        streamed: true,
        usage_source: "upstream",
        quota_charged: charge(expected.usage.prompt_tokens, expected.usage.completion_tokens),
      });
    }
  });

  it("without upstream usage, shows and bills the same local count", async () => {
    const userId = await freshUser();
    const final = await client.messages.stream({ model: "chat-no-usage", ...hello }).finalMessage();
    const s = await settled([pg.gw], userId);
    expect(s.log).toMatchObject({
      usage_source: "estimated",
      input_tokens: final.usage.input_tokens,
      output_tokens: final.usage.output_tokens,
    });
    expect(final.usage.output_tokens).toBeGreaterThan(0);
    expect(s.log.quota_charged).toBe(charge(final.usage.input_tokens, final.usage.output_tokens));
  });
});

describe("fallback across protocols", () => {
  it("anthropic target down → the chat target answers, translated", async () => {
    const userId = await freshUser();
    const answer = await client.messages.create({ model: "to-chat", ...hello });
    expect(textOf(answer)).toBe((await chatAnswer({ model: "to-chat", ...hello })).text);
    const s = await settled([pg.gw], userId);
    expect(s.log).toMatchObject({ provider: "chat", fallback_path: ["nativeDown"], status: 200 });
  });

  it("chat target down → the anthropic target answers natively, streaming too", async () => {
    const userId = await freshUser();
    const expected = textOf(await directClaude.messages.create({ model: "mock-claude", ...hello }));
    expect(textOf(await client.messages.create({ model: "to-native", ...hello }))).toBe(expected);
    expect(textOf(await client.messages.stream({ model: "to-native", ...hello }).finalMessage())).toBe(expected);
    const s = await settled([pg.gw], userId, 2);
    for (const log of s.logs) expect(log).toMatchObject({ provider: "native", fallback_path: ["chatDown"], status: 200 });
  });
});

describe("the anthropic-beta header", () => {
  const betas = "context-1m-2025-08-07, interleaved-thinking-2025-05-14";
  /** The proxied requests a call made, from the proxy's record. */
  async function proxied(call: () => Promise<unknown>) {
    const before = pg.proxy.requests.length;
    await call();
    return pg.proxy.requests.slice(before);
  }

  it("reaches an anthropic target as the client sent it, and never a chat target", async () => {
    await freshUser();
    const options = { headers: { "anthropic-beta": betas } };
    const toChat = await proxied(() => client.messages.create({ model: "to-chat", ...hello }, options));
    expect(toChat.map((r) => [r.path, r.headers["anthropic-beta"]])).toEqual([["/v1/messages", betas]]);
    const toNative = await proxied(() => client.messages.create({ model: "to-native", ...hello }, options));
    expect(toNative.map((r) => r.path)).toEqual(["/v1/chat/completions"]);
    expect(toNative[0]!.headers["anthropic-beta"]).toBeUndefined();
    // Without the header, none is sent; the provider's own headers stay as they are.
    const plain = await proxied(() => client.messages.create({ model: "to-chat", ...hello }));
    expect(plain[0]!.headers).toMatchObject({ "x-api-key": MOCK_KEY, "anthropic-version": "2023-06-01" });
    expect(plain[0]!.headers["anthropic-beta"]).toBeUndefined();
  });

  it("refuses a header that is not a list of beta names, before anything is sent", async () => {
    await freshUser();
    const sent = await proxied(async () => {
      const err = await client.messages
        .create({ model: "to-chat", ...hello }, { headers: { "anthropic-beta": "beta one; drop" } })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(BadRequestError);
      expect((err as BadRequestError).message).toContain("anthropic-beta header must list beta feature names");
    });
    expect(sent).toEqual([]);
  });
});

describe("streams dropped midway", () => {
  it.each(["native-drop", "chat-drop"])("%s: the SDK raises the in-band error; billed once for what was delivered", async (model) => {
    const userId = await freshUser();
    const stream = client.messages.stream({ model, ...hello });
    const err = await stream.finalMessage().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).type).toBe("api_error");
    expect((err as APIError).message).toContain("The upstream stream ended unexpectedly.");
    const s = await settled([pg.gw], userId);
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
    const wrongKey = new Anthropic({ apiKey: "gw_wrong", baseURL: pg.gw.url, maxRetries: 0 });
    const cases: [() => Promise<unknown>, new (...args: never[]) => APIError, number, string][] = [
      [() => wrongKey.messages.create({ model: "native", ...hello }), AuthenticationError, 401, "Invalid or revoked API key"],
      [() => client.messages.create({ model: "nope", ...hello }), NotFoundError, 404, "The model 'nope' does not exist"],
      [() => client.messages.create({ model: "native", ...hello, max_tokens: 0 }), BadRequestError, 400, "Invalid max_tokens"],
      [() => client.messages.create({ model: "other", ...hello }), BadRequestError, 400, "served over the gemini protocol"],
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
    const err = await failure(client.messages.create({ model: "native", ...hello }));
    expect(err).toBeInstanceOf(RateLimitError);
    expect(err.type).toBe("rate_limit_error");
    expect(Number(err.headers?.get("retry-after"))).toBeGreaterThan(0);
  });
});
