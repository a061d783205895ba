import Anthropic, { AuthenticationError, NotFoundError, OverloadedError, RateLimitError } from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MockUpstream, startMockUpstream } from "../../src/mock-upstream/server.js";
import { postJson } from "../helpers/mock-upstream-client.js";
import { validateAnthropic } from "../helpers/openapi.js";
import { readSse } from "../helpers/sse-frames.js";

const API_KEY = "sk-ant-mock-test";
let mock: MockUpstream;
let client: Anthropic;

beforeAll(async () => {
  mock = await startMockUpstream({ port: 0, apiKey: API_KEY });
  // The SDK appends /v1/messages to its base URL: the mock's root.
  client = new Anthropic({ apiKey: API_KEY, baseURL: mock.url, maxRetries: 0 });
});
afterAll(async () => {
  await mock.close();
});

const hello = {
  model: "mock-claude",
  max_tokens: 100,
  system: "You are terse.", // 14 chars
  messages: [{ role: "user" as const, content: "Say hello" }], // 9 chars
};
// ceil((14 + 9) / 4) + 3 per message, the system prompt counting as one
const HELLO_INPUT_TOKENS = 6 + 6;
const weather = {
  model: "mock-claude",
  max_tokens: 100,
  messages: [{ role: "user" as const, content: "What's the weather in Paris?" }],
  tools: [
    { name: "get_weather", input_schema: { type: "object" as const, properties: {} } },
    { name: "get_time", input_schema: { type: "object" as const, properties: {} } },
  ],
};

const post = (body: unknown, headers: Record<string, string> = {}) =>
  postJson(`${mock.url}/v1/messages`, body, { "x-api-key": API_KEY, "anthropic-version": "2023-06-01", ...headers });
const messageOf = async (res: Response) => (await res.json()) as Anthropic.Message;

/** The raw events of a streamed answer, each checked against the reference schema and its `event:` line. */
async function streamed(body: object, headers: Record<string, string> = {}) {
  const { events, broken } = await readSse(await post({ ...body, stream: true }, headers));
  const parsed = events.map((e) => {
    const data = JSON.parse(e.data) as Anthropic.MessageStreamEvent;
    expect(validateAnthropic("MessageStreamEvent", data), data.type).toEqual([]);
    expect(e.event).toBe(data.type);
    return data;
  });
  return { events: parsed, broken };
}

const textOf = (m: Anthropic.Message) => (m.content[0]?.type === "text" ? m.content[0].text : undefined);

describe("mock upstream: Anthropic messages (JSON)", () => {
  it("answers a Message deterministically, with usage following the prompt rule", async () => {
    const [first, second] = await Promise.all([post(hello), post(hello)]);
    const raw = await first.text();
    expect(await second.text()).toBe(raw);
    const body = JSON.parse(raw) as Anthropic.Message;
    expect(validateAnthropic("Message", body)).toEqual([]);

    const message = await client.messages.create(hello);
    expect(message).toMatchObject({ type: "message", role: "assistant", model: "mock-claude", stop_reason: "end_turn" });
    expect(message.id).toMatch(/^msg_[0-9a-f]{24}$/);
    const text = textOf(message)!;
    expect(text).toMatch(/^Mock reply [0-9a-f]{8}: \w+/);
    expect(textOf(body)).toBe(text);
    const words = text.split(" ").length - 3;
    expect(message.usage).toMatchObject({
      input_tokens: HELLO_INPUT_TOKENS,
      output_tokens: words,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
    });
    const withoutSystem = await client.messages.create({ ...hello, system: undefined });
    expect(withoutSystem.usage.input_tokens).toBe(3 + 3);
    expect(textOf(withoutSystem)).not.toBe(text);
  });

  it("takes content blocks (text, image, tool_use, tool_result) and system blocks", async () => {
    const blocks = await client.messages.create({
      model: "mock-claude",
      max_tokens: 50,
      system: [{ type: "text", text: "You are terse." }],
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "weather?" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
          ],
        },
        { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "get_weather", input: { location: "Paris" } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "sunny" }] },
      ],
      tools: weather.tools,
    });
    // The last user turn holds no text asking about the weather: the answer is text.
    expect(blocks.stop_reason).toBe("end_turn");
    expect(textOf(blocks)).toMatch(/^Mock reply/);
  });

  it("stops at max_tokens with the uncapped answer's prefix", async () => {
    const full = textOf(await client.messages.create(hello))!;
    const capped = await client.messages.create({ ...hello, max_tokens: 3 });
    expect(capped.stop_reason).toBe("max_tokens");
    expect(capped.usage.output_tokens).toBe(3);
    expect(full.startsWith(textOf(capped)!)).toBe(true);
  });

  it("uses the first tool when asked about the weather, or the one tool_choice names", async () => {
    const raw = await messageOf(await post(weather));
    expect(validateAnthropic("Message", raw)).toEqual([]);
    expect(raw.stop_reason).toBe("tool_use");
    expect(raw.content[0]).toMatchObject({ type: "tool_use", name: "get_weather", input: { location: "Paris" } });
    expect(raw.content[0]!.type === "tool_use" && raw.content[0]!.id).toMatch(/^toolu_/);

    const named = await client.messages.create({ ...weather, tool_choice: { type: "tool", name: "get_time" } });
    expect(named.content[0]!.type === "tool_use" && named.content[0]!.name).toBe("get_time");
    const none = await client.messages.create({ ...weather, tool_choice: { type: "none" } });
    expect(none.stop_reason).toBe("end_turn");
    const any = await client.messages.create({ ...hello, tools: weather.tools, tool_choice: { type: "any" } });
    expect(any.content[0]!.type === "tool_use" && any.content[0]!.name).toBe("get_weather");
  });
});

describe("mock upstream: Anthropic messages (stream)", () => {
  it("sends the real API's event sequence, ending in the JSON answer", async () => {
    const json = await client.messages.create(hello);
    const { events, broken } = await streamed(hello);
    expect(broken).toBe(false);
    const deltas = events.filter((e) => e.type === "content_block_delta");
    expect(events.map((e) => e.type)).toEqual([
      "message_start",
      "content_block_start",
      "ping",
      ...deltas.map(() => "content_block_delta"),
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(deltas).toHaveLength(json.usage.output_tokens);
    const start = events[0]!;
    expect(start.type === "message_start" && [start.message.usage.input_tokens, start.message.usage.output_tokens]).toEqual([
      HELLO_INPUT_TOKENS,
      1,
    ]);
    const delta = events.at(-2)!;
    expect(delta.type === "message_delta" && [delta.delta.stop_reason, delta.usage.output_tokens]).toEqual([
      "end_turn",
      json.usage.output_tokens,
    ]);

    const stream = client.messages.stream(hello);
    let text = "";
    stream.on("text", (t) => (text += t));
    // The helper adds its own `parsed_output` to what the API sent.
    expect(await stream.finalMessage()).toMatchObject(json);
    expect(text).toBe(textOf(json));
  });

  it("streams tool use as input_json_delta slices", async () => {
    const { events } = await streamed(weather);
    const json = events.flatMap((e) =>
      e.type === "content_block_delta" && e.delta.type === "input_json_delta" ? [e.delta.partial_json] : [],
    );
    expect(JSON.parse(json.join(""))).toEqual({ location: "Paris" });
    const final = await client.messages.stream(weather).finalMessage();
    expect(final.content[0]).toMatchObject({ type: "tool_use", name: "get_weather", input: { location: "Paris" } });
    expect(final.stop_reason).toBe("tool_use");
  });

  it("is readable with create({stream: true})", async () => {
    const types: string[] = [];
    for await (const event of await client.messages.create({ ...hello, stream: true })) types.push(event.type);
    // The SDK drops pings.
    expect(types[0]).toBe("message_start");
    expect(types.at(-1)).toBe("message_stop");
  });
});

describe("mock upstream: Anthropic errors and auth", () => {
  it("takes the key as x-api-key or a bearer token, with or without anthropic-version", async () => {
    expect((await postJson(`${mock.url}/v1/messages`, hello, { authorization: `Bearer ${API_KEY}` })).status).toBe(200);
    expect((await postJson(`${mock.url}/v1/messages`, hello, { "x-api-key": API_KEY })).status).toBe(200);
    expect((await postJson(`${mock.url}/v1/messages`, hello, { authorization: API_KEY })).status).toBe(401);
    const wrong = new Anthropic({ apiKey: "sk-ant-wrong", baseURL: mock.url, maxRetries: 0 });
    const err = await wrong.messages.create(hello).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthenticationError);
    expect((err as AuthenticationError).type).toBe("authentication_error");
    const raw = await postJson(`${mock.url}/v1/messages`, hello, { "x-api-key": "nope" });
    expect(raw.status).toBe(401);
    expect(validateAnthropic("ErrorResponse", await raw.json())).toEqual([]);
  });

  it.each([
    [{ ...hello, max_tokens: undefined }, "max_tokens"],
    [{ ...hello, max_tokens: 0 }, "max_tokens"],
    [{ ...hello, messages: [] }, "messages"],
    [{ ...hello, messages: [{ role: "system", content: "hi" }] }, "messages.0.role"],
    [{ ...hello, messages: [{ role: "user", content: [{ type: "text" }] }] }, "messages.0.content.0.text"],
    [{ ...hello, model: "" }, "model"],
  ])("answers %j with 400 invalid_request_error naming %s", async (body, field) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    const error = (await res.json()) as { error: { type: string; message: string } };
    expect(validateAnthropic("ErrorResponse", error)).toEqual([]);
    expect(error.error.type).toBe("invalid_request_error");
    expect(error.error.message).toContain(`'${field}'`);
  });

  it("answers unknown /v1/messages paths with not_found_error", async () => {
    const err = await client.messages.countTokens({ model: "mock-claude", messages: hello.messages }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NotFoundError);
    expect((err as NotFoundError).type).toBe("not_found_error");
  });
});

describe("mock upstream: Anthropic faults", () => {
  it("x-mock-status answers Anthropic error types with the retry hints", async () => {
    const overloaded = await client.messages
      .create(hello, { headers: { "x-mock-status": "529", "x-mock-retry-after": "5" } })
      .catch((e: unknown) => e);
    expect(overloaded).toBeInstanceOf(OverloadedError);
    expect((overloaded as OverloadedError).type).toBe("overloaded_error");
    expect((overloaded as OverloadedError).headers.get("retry-after")).toBe("5");

    const limited = await client.messages
      .create(hello, { headers: { "x-mock-status": "429", "x-mock-retry-after-ms": "1200" } })
      .catch((e: unknown) => e);
    expect(limited).toBeInstanceOf(RateLimitError);
    expect((limited as RateLimitError).type).toBe("rate_limit_error");
    expect((limited as RateLimitError).headers.get("retry-after-ms")).toBe("1200");

    const raw = await post(hello, { "x-mock-status": "500" });
    const body = (await raw.json()) as { error: { type: string } };
    expect(validateAnthropic("ErrorResponse", body)).toEqual([]);
    expect(body.error.type).toBe("api_error");
  });

  it("x-mock-omit-usage leaves usage out of the JSON answer, message_start and message_delta", async () => {
    expect(await messageOf(await post(hello, { "x-mock-omit-usage": "1" }))).not.toHaveProperty("usage");
    const { events } = await readSse(await post({ ...hello, stream: true }, { "x-mock-omit-usage": "1" }));
    const parsed = events.map((e) => JSON.parse(e.data) as Record<string, unknown>);
    expect(parsed[0]!.message).not.toHaveProperty("usage");
    expect(parsed.find((e) => e.type === "message_delta")).not.toHaveProperty("usage");
    expect(parsed.at(-1)!.type).toBe("message_stop");
  });

  it("x-mock-drop-after cuts the stream after that many deltas", async () => {
    const { events, broken } = await streamed(hello, { "x-mock-drop-after": "2" });
    expect(broken).toBe(true);
    expect(events.map((e) => e.type)).toEqual([
      "message_start",
      "content_block_start",
      "ping",
      "content_block_delta",
      "content_block_delta",
    ]);
  });

  it("x-mock-delay-ms and x-mock-chunk-delay-ms still answer in full", async () => {
    expect((await post(hello, { "x-mock-delay-ms": "20" })).status).toBe(200);
    const { events } = await streamed(hello, { "x-mock-chunk-delay-ms": "2" });
    expect(events.at(-1)!.type).toBe("message_stop");
  });
});
