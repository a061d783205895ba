import OpenAI, { AuthenticationError } from "openai";
import type { ChatCompletion, ChatCompletionChunk, ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";
import { CHAT_IMAGE_TOKENS } from "../../src/mock-upstream/openai-chat-images.js";
import { type MockUpstream, startMockUpstream } from "../../src/mock-upstream/server.js";
import { postJson } from "../helpers/mock-upstream-client.js";
import { validateOpenAI } from "../helpers/openapi.js";
import { readSse } from "../helpers/sse-frames.js";

const API_KEY = "sk-mock-test";
let mock: MockUpstream;
let client: OpenAI;

beforeAll(async () => {
  mock = await startMockUpstream({ port: 0, apiKey: API_KEY });
  client = new OpenAI({ apiKey: API_KEY, baseURL: mock.baseUrl, maxRetries: 0 });
});
afterAll(async () => {
  await mock.close();
});

const hello: ChatCompletionCreateParamsNonStreaming = {
  model: "mock-gpt-small",
  messages: [
    { role: "system", content: "You are terse." }, // 14 chars
    { role: "user", content: "Say hello" }, // 9 chars
  ],
};
// ceil((14 + 9) / 4) + 3 per message
const HELLO_PROMPT_TOKENS = 6 + 6;

const weatherTools = {
  tools: [
    {
      type: "function" as const,
      function: { name: "get_weather", parameters: { type: "object", properties: { location: { type: "string" } } } },
    },
    { type: "function" as const, function: { name: "get_time", parameters: { type: "object", properties: {} } } },
  ],
};

function words(content: string): string[] {
  return content.replace(/^Mock reply [0-9a-f]{8}: /, "").split(" ");
}

async function collect(stream: AsyncIterable<ChatCompletionChunk>): Promise<ChatCompletionChunk[]> {
  const chunks: ChatCompletionChunk[] = [];
  for await (const chunk of stream) {
    expect(validateOpenAI("CreateChatCompletionStreamResponse", chunk)).toEqual([]);
    chunks.push(chunk);
  }
  return chunks;
}

function post(body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return postJson(`${mock.baseUrl}/chat/completions`, body, { authorization: `Bearer ${API_KEY}`, ...headers });
}

/** The `data:` payloads of an SSE body, and whether the connection broke before its end. */
async function readEvents(res: Response): Promise<{ events: string[]; broken: boolean }> {
  const { events, broken } = await readSse(res);
  return { events: events.map((e) => e.data), broken };
}

describe("mock upstream: OpenAI models", () => {
  it("lists a fixed set of models in the ListModelsResponse shape", async () => {
    const page = await client.models.list();
    expect(page.data.map((m) => m.id)).toEqual(["mock-gpt-small", "mock-gpt-large", "mock-embed"]);
    const raw = await (await fetch(`${mock.baseUrl}/models`, { headers: { authorization: `Bearer ${API_KEY}` } })).json();
    expect(validateOpenAI("ListModelsResponse", raw)).toEqual([]);
  });
});

describe("mock upstream: chat completions", () => {
  it("answers deterministically, with usage following the documented rule", async () => {
    const first = await client.chat.completions.create(hello);
    const second = await client.chat.completions.create(hello);
    expect(validateOpenAI("CreateChatCompletionResponse", first)).toEqual([]);
    expect(second).toEqual(first);

    const content = first.choices[0]!.message.content!;
    expect(content).toMatch(/^Mock reply [0-9a-f]{8}: \w+/);
    expect(first.model).toBe("mock-gpt-small");
    expect(first.id).toMatch(/^chatcmpl-/);
    expect(first.choices[0]!.finish_reason).toBe("stop");
    const n = words(content).length;
    expect(n).toBeGreaterThanOrEqual(5);
    expect(n).toBeLessThanOrEqual(30);
    expect(first.usage).toEqual({
      prompt_tokens: HELLO_PROMPT_TOKENS,
      completion_tokens: n,
      total_tokens: HELLO_PROMPT_TOKENS + n,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
    });

    const other = await client.chat.completions.create({
      ...hello,
      messages: [{ role: "user", content: "Say goodbye" }],
    });
    expect(other.choices[0]!.message.content).not.toBe(content);
  });

  it("caps the words at max_tokens and reports finish_reason length", async () => {
    const full = (await client.chat.completions.create(hello)).choices[0]!.message.content!;
    const capped = await client.chat.completions.create({ ...hello, max_completion_tokens: 3 });
    expect(validateOpenAI("CreateChatCompletionResponse", capped)).toEqual([]);
    expect(capped.choices[0]!.finish_reason).toBe("length");
    expect(capped.usage!.completion_tokens).toBe(3);
    expect(full.startsWith(capped.choices[0]!.message.content!)).toBe(true);
  });

  it("streams chunks whose content equals the JSON answer, ending with a usage chunk", async () => {
    const json = await client.chat.completions.create(hello);
    const chunks = await collect(await client.chat.completions.create({ ...hello, stream: true, stream_options: { include_usage: true } }));
    expect(chunks[0]!.choices[0]!.delta).toEqual({ role: "assistant", content: "" });
    const text = chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");
    expect(text).toBe(json.choices[0]!.message.content);
    // role chunk, one chunk per word, finish chunk, usage chunk
    expect(chunks).toHaveLength(json.usage!.completion_tokens + 3);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual(json.usage);
    expect(chunks.at(-2)!.choices[0]!.finish_reason).toBe("stop");
    for (const chunk of chunks.slice(0, -1)) expect(chunk.usage).toBeNull();
    expect(new Set(chunks.map((c) => c.id))).toEqual(new Set([json.id]));
  });

  it("streams without usage when include_usage is not set", async () => {
    const chunks = await collect(await client.chat.completions.create({ ...hello, stream: true }));
    expect(chunks.every((c) => c.usage === undefined && c.choices.length === 1)).toBe(true);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe("stop");
  });

  it("ends the SSE body with data: [DONE]", async () => {
    const res = await post({ ...hello, stream: true });
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const { events, broken } = await readEvents(res);
    expect(broken).toBe(false);
    expect(events.at(-1)).toBe("[DONE]");
  });

  it("calls the first function when the user asks about the weather", async () => {
    const request = {
      model: "mock-gpt-large",
      messages: [{ role: "user" as const, content: "What's the weather in Paris?" }],
      ...weatherTools,
    };
    const res = await client.chat.completions.create(request);
    expect(validateOpenAI("CreateChatCompletionResponse", res)).toEqual([]);
    const choice = res.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.content).toBeNull();
    const call = choice.message.tool_calls![0]!;
    expect(call.type === "function" && call.function.name).toBe("get_weather");
    expect(call.type === "function" && JSON.parse(call.function.arguments)).toEqual({ location: "Paris" });

    const chunks = await collect(await client.chat.completions.create({ ...request, stream: true }));
    const args = chunks.map((c) => c.choices[0]?.delta.tool_calls?.[0]?.function?.arguments ?? "").join("");
    expect(args).toBe(call.type === "function" && call.function.arguments);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe("tool_calls");
  });

  it("takes a tool round trip: an assistant turn without content counts as 0 characters", async () => {
    const res = await client.chat.completions.create({
      model: "mock-gpt-small",
      messages: [
        { role: "user", content: "weather?" }, // 8 chars
        { role: "assistant", tool_calls: [{ id: "call_1", type: "function", function: { name: "get_weather", arguments: "{}" } }] },
        { role: "tool", tool_call_id: "call_1", content: "sunny" }, // 5 chars
      ],
      ...weatherTools,
    });
    expect(res.choices[0]!.finish_reason).toBe("stop");
    // ceil(13 / 4) + 3 per message
    expect(res.usage!.prompt_tokens).toBe(4 + 9);
  });

  it("follows tool_choice: a named function is called, none answers with text", async () => {
    const named = await client.chat.completions.create({
      ...hello,
      ...weatherTools,
      tool_choice: { type: "function", function: { name: "get_time" } },
    });
    const call = named.choices[0]!.message.tool_calls![0]!;
    expect(call.type === "function" && call.function.name).toBe("get_time");

    const none = await client.chat.completions.create({
      model: "mock-gpt-small",
      messages: [{ role: "user", content: "weather?" }],
      ...weatherTools,
      tool_choice: "none",
    });
    expect(none.choices[0]!.finish_reason).toBe("stop");
    expect(none.choices[0]!.message.content).toMatch(/^Mock reply/);
  });

  it('answers with an image when modalities has "image", in message.images and in one stream delta', async () => {
    type Images = { images?: { type: string; image_url: { url: string } }[] };
    const ask = (modalities: string[] | undefined, extra: object = {}, faults: Record<string, string> = {}) =>
      postJson(
        `${mock.baseUrl}/chat/completions`,
        Object.assign({ modalities }, hello, extra),
        Object.assign({ authorization: `Bearer ${API_KEY}` }, faults),
      );
    const plain = (await (await ask(undefined)).json()) as ChatCompletion;
    const textOnly = (await (await ask(["text"])).json()) as ChatCompletion;
    const withImage = (await (await ask(["image", "text"])).json()) as ChatCompletion;
    expect(validateOpenAI("CreateChatCompletionResponse", withImage)).toEqual([]);
    expect(textOnly).toEqual(plain);
    expect((plain.choices[0]!.message as Images).images).toBeUndefined();
    const png = `data:image/png;base64,${MOCK_IMAGES.png.toString("base64")}`;
    expect((withImage.choices[0]!.message as Images).images).toEqual([{ type: "image_url", image_url: { url: png } }]);
    expect(withImage.choices[0]!.message.content).toBe(plain.choices[0]!.message.content);
    expect(withImage.usage!.completion_tokens).toBe(plain.usage!.completion_tokens + CHAT_IMAGE_TOKENS);

    const linked = (await (await ask(["image"], {}, { "x-mock-image": "url" })).json()) as ChatCompletion;
    const link = (linked.choices[0]!.message as Images).images![0]!.image_url.url;
    expect(link).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mock-images\/[0-9a-f]{24}-0\.png$/);
    expect(Buffer.from(await (await fetch(link)).arrayBuffer())).toEqual(MOCK_IMAGES.png);

    const { events } = await readSse(await ask(["image", "text"], { stream: true }, { "x-mock-image": "gif" }));
    const deltas = events
      .filter((e) => e.data !== "[DONE]")
      .map((e) => (JSON.parse(e.data) as ChatCompletionChunk).choices[0]!.delta as Images);
    const gif = `data:image/png;base64,${MOCK_IMAGES.gif.toString("base64")}`;
    expect(deltas.flatMap((d) => d.images ?? [])).toEqual([{ type: "image_url", image_url: { url: gif } }]);
  });
});

describe("mock upstream: errors", () => {
  it("rejects a wrong API key with 401 invalid_api_key", async () => {
    const wrong = new OpenAI({ apiKey: "sk-wrong", baseURL: mock.baseUrl, maxRetries: 0 });
    const err = await wrong.models.list().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AuthenticationError);
    expect((err as AuthenticationError).status).toBe(401);
    expect((err as AuthenticationError).code).toBe("invalid_api_key");
  });

  it("answers invalid requests with 400 and unknown routes with 404, in the ErrorResponse shape", async () => {
    const bad = await post({ model: "mock-gpt-small", messages: [] });
    expect(bad.status).toBe(400);
    expect(validateOpenAI("ErrorResponse", await bad.json())).toEqual([]);
    const missing = await fetch(`${mock.baseUrl}/nope`, { headers: { authorization: `Bearer ${API_KEY}` } });
    expect(missing.status).toBe(404);
    expect(validateOpenAI("ErrorResponse", await missing.json())).toEqual([]);
  });
});

describe("mock upstream: faults", () => {
  it("x-mock-status answers that status with retry hints and a marked body", async () => {
    const res = await post(hello, { "x-mock-status": "529", "x-mock-retry-after": "7", "x-mock-retry-after-ms": "1500" });
    expect(res.status).toBe(529);
    expect(res.headers.get("retry-after")).toBe("7");
    expect(res.headers.get("retry-after-ms")).toBe("1500");
    const body = await res.json();
    expect(validateOpenAI("ErrorResponse", body)).toEqual([]);
    expect(JSON.stringify(body)).toContain("upstream-secret-detail");
  });

  it("ignores malformed fault headers", async () => {
    const res = await post(hello, { "x-mock-status": "boom", "x-mock-delay-ms": "-5" });
    expect(res.status).toBe(200);
  });

  it("x-mock-drop-after cuts the stream after that many content chunks", async () => {
    const res = await post({ ...hello, stream: true }, { "x-mock-drop-after": "2" });
    expect(res.status).toBe(200);
    const { events } = await readEvents(res);
    expect(events).not.toContain("[DONE]");
    // the role chunk, then exactly two content chunks
    expect(events).toHaveLength(3);
    const chunks = events.map((e) => JSON.parse(e) as ChatCompletionChunk);
    expect(chunks.every((c) => c.choices[0]!.finish_reason === null)).toBe(true);
    expect((await post(hello)).status).toBe(200);
  });

  it("x-mock-omit-usage leaves usage out of JSON and streamed answers", async () => {
    const json = await (await post(hello, { "x-mock-omit-usage": "1" })).json();
    expect(json).not.toHaveProperty("usage");
    expect(validateOpenAI("CreateChatCompletionResponse", json)).toEqual([]);

    const streamed = await post({ ...hello, stream: true, stream_options: { include_usage: true } }, { "x-mock-omit-usage": "1" });
    const { events } = await readEvents(streamed);
    expect(events.at(-1)).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as ChatCompletionChunk);
    expect(chunks.every((c) => c.usage == null && c.choices.length === 1)).toBe(true);
  });

  it("x-mock-delay-ms and x-mock-chunk-delay-ms still answer in full", async () => {
    const delayed = await post(hello, { "x-mock-delay-ms": "50" });
    expect(delayed.status).toBe(200);
    const slow = await post({ ...hello, stream: true }, { "x-mock-chunk-delay-ms": "5" });
    expect((await readEvents(slow)).events.at(-1)).toBe("[DONE]");
  });
});
