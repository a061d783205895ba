import OpenAI, { APIError } from "openai";
import type { ChatCompletionChunk, ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { convertChatRequestToGemini } from "../../src/providers/gemini/convert-chat-request-to-gemini.js";
import { chatTranslationSchema } from "../../src/providers/openai/chat-translation-schema.js";
import { MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";
import { TOOL_ARGUMENTS } from "../../src/mock-upstream/mock-text.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { collect } from "../helpers/async-iter.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { sdkUser } from "../helpers/sdk-user.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { validateGemini } from "../helpers/gemini-proto.js";
import { countLogWrites, settled } from "../helpers/metering-checks.js";
import { validateOpenAI } from "../helpers/openapi.js";
import { charge, MOCK_KEY } from "../helpers/protocol-gateway.js";
import { jsonAnswer, sseAnswer, startRecordingUpstream, type RecordingUpstream } from "../helpers/recording-upstream.js";
import { chargeComment, readSse } from "../helpers/sse-frames.js";

// POST /v1/chat/completions served by `gemini` targets (docs/translation.md, "OpenAI chat → Gemini") through the
// official OpenAI SDK: JSON and streams translated from the mock upstream's generateContent, tools round trip,
// billed once from usageMetadata by the chat rule, fallback across protocols both ways, a stream dropped midway,
// requests a Gemini target cannot take. Images come from the mock's Gemini image output, and from a fixed upstream of
// the test's own (a Gemini image answer, JSON and SSE, with bytes declared as another type, and invalid ones):
// delivered as data: URIs typed by their bytes, an invalid one refused and not charged.

const GEMINI_MODEL = "mock-gemini";
const CHAT_MODEL = "mock-gpt-small";

let mock: MockUpstream;
let proxy: FaultProxy;
let images: RecordingUpstream;
let gw: TestGateway;

beforeAll(async () => {
  mock = await startMockUpstream({ apiKey: MOCK_KEY });
  proxy = await startFaultProxy(mock.url);
  images = await startRecordingUpstream();
  // The proxy's base URLs end in /v1, as an openai provider's do; a gemini base URL is the host root.
  const root = (faults: Record<string, string | number>) => proxy.baseUrl(faults).replace(/\/v1$/, "");
  const gemini = (base_url: string) => ({ protocol: "gemini" as const, base_url, api_key: MOCK_KEY });
  const openai = (base_url: string) => ({ protocol: "openai" as const, base_url, api_key: MOCK_KEY });
  const model = (targets: (string | { provider: string; model: string })[]) => ({
    kind: "chat" as const,
    upstream: GEMINI_MODEL,
    targets,
    completion_ratio: 3,
  });
  const chat = (provider: string) => ({ provider, model: CHAT_MODEL });
  gw = await startTestGateway({
    config: {
      providers: {
        gem: gemini(mock.url),
        gemDown: gemini(root({ "x-mock-status": 503 })),
        gemDropping: gemini(root({ "x-mock-drop-after": 2 })),
        gemNoUsage: gemini(root({ "x-mock-omit-usage": "1" })),
        fixed: gemini(images.url),
        chat: openai(mock.baseUrl),
        chatDown: openai(proxy.baseUrl({ "x-mock-status": 503 })),
      },
      models: {
        gem: model(["gem"]),
        "gem-then-chat": model(["gemDown", chat("chat")]),
        "chat-then-gem": model([chat("chatDown"), "gem"]),
        "gem-drop": model(["gemDropping"]),
        "gem-no-usage": model(["gemNoUsage"]),
        "gem-image": model(["fixed"]),
      },
      plans: { free: { daily_tokens: 1_000_000, context_limit: 128_000 } },
      default_plan: "free",
      media: { download: { allow_private: ["127.0.0.1"] } },
    },
  });
  countLogWrites(gw);
});

afterAll(async () => {
  await gw?.close();
  await images?.close();
  await proxy?.close();
  await mock?.close();
});

const freshUser = () => sdkUser(gw, "chat-gemini", "free");

const messages: ChatCompletionMessageParam[] = [
  { role: "system", content: "You are terse." },
  { role: "user", content: "Say hello to the chat route" },
];

type GeminiAnswer = {
  candidates: { content: { parts: { text?: string; functionCall?: { name: string; args: object } }[] }; finishReason: string }[];
  usageMetadata: { promptTokenCount: number; candidatesTokenCount: number };
};

/** What the mock's Gemini model answers to the translation of a chat request. */
async function geminiAnswer(body: Record<string, unknown>): Promise<GeminiAnswer> {
  const request = convertChatRequestToGemini(chatTranslationSchema.parse(body));
  const res = await fetch(`${mock.url}/v1beta/models/${GEMINI_MODEL}:generateContent`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-goog-api-key": MOCK_KEY },
    body: JSON.stringify(request),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as GeminiAnswer;
}

const textOf = (answer: GeminiAnswer) => answer.candidates[0]!.content.parts.map((p) => p.text ?? "").join("");

function post(key: string, body: object) {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

describe("chat completions on a gemini target, through the OpenAI SDK", () => {
  it("JSON: the Gemini answer as a chat.completion with the public model, billed on usageMetadata", async () => {
    const user = await freshUser();
    const answer = await user.client.chat.completions.create({ model: "gem", messages, max_tokens: 40 });
    expect(validateOpenAI("CreateChatCompletionResponse", answer)).toEqual([]);
    const expected = await geminiAnswer({ messages, max_tokens: 40 });
    const { promptTokenCount: prompt, candidatesTokenCount: completion } = expected.usageMetadata;
    expect(answer).toMatchObject({
      object: "chat.completion",
      model: "gem",
      choices: [{ index: 0, message: { role: "assistant", content: textOf(expected) }, finish_reason: "stop" }],
      usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    });
    expect(answer.id).toMatch(/^chatcmpl-/);
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({
      route: "/v1/chat/completions",
      client_protocol: "openai",
      provider: "gem",
      public_model: "gem",
      usage_source: "upstream",
      input_tokens: prompt,
      output_tokens: completion,
      quota_charged: charge(prompt, completion),
      streamed: false,
    });
  });

  it("stream: role first, text deltas, the finish reason, the usage chunk the client asked for, billed the same", async () => {
    const user = await freshUser();
    const stream = await user.client.chat.completions.create({
      model: "gem",
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: ChatCompletionChunk[] = await collect(stream);
    for (const chunk of chunks) expect(validateOpenAI("CreateChatCompletionStreamResponse", chunk)).toEqual([]);
    const expected = await geminiAnswer({ messages });
    const { promptTokenCount: prompt, candidatesTokenCount: completion } = expected.usageMetadata;
    expect(chunks[0]!.choices[0]!.delta.role).toBe("assistant");
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe(textOf(expected));
    expect(chunks.filter((c) => c.choices[0]?.finish_reason).map((c) => c.choices[0]!.finish_reason)).toEqual(["stop"]);
    expect(chunks.every((c) => c.model === "gem" && c.id === chunks[0]!.id)).toBe(true);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toMatchObject({
      prompt_tokens: prompt,
      completion_tokens: completion,
      gateway_charge: Number(charge(prompt, completion)),
    });
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({ streamed: true, usage_source: "upstream", quota_charged: charge(prompt, completion), error_code: null });
  });

  it("stream without include_usage: no usage chunk, the charge in a comment, then [DONE]", async () => {
    const user = await freshUser();
    const res = await post(user.key, { model: "gem", messages, stream: true });
    expect(res.status).toBe(200);
    const { events, broken, comments } = await readSse(res);
    expect(broken).toBe(false);
    expect(events.at(-1)!.data).toBe("[DONE]");
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data) as ChatCompletionChunk);
    expect(chunks.every((c) => c.usage === undefined && c.choices.length > 0)).toBe(true);
    const { promptTokenCount: prompt, candidatesTokenCount: completion } = (await geminiAnswer({ messages })).usageMetadata;
    expect(chargeComment(comments)?.units).toBe(BigInt(charge(prompt, completion)));
    await settled([gw], user.id);
  });

  it("tools round trip: a function call comes back as tool_calls, its result goes back as a functionResponse", async () => {
    const user = await freshUser();
    const tools: ChatCompletionTool[] = [
      {
        type: "function",
        function: {
          name: "get_weather",
          description: "The weather of a place",
          parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] },
        },
      },
    ];
    const ask: ChatCompletionMessageParam[] = [{ role: "user", content: "What is the weather in Paris?" }];
    const first = await user.client.chat.completions.create({ model: "gem", messages: ask, tools });
    expect(validateOpenAI("CreateChatCompletionResponse", first)).toEqual([]);
    const choice = first.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    expect(choice.message.content).toBeNull();
    const call = choice.message.tool_calls![0]!;
    expect(call).toMatchObject({ type: "function", function: { name: "get_weather" } });
    expect(JSON.parse((call as { function: { arguments: string } }).function.arguments)).toEqual(TOOL_ARGUMENTS);

    const followUp: ChatCompletionMessageParam[] = [
      ...ask,
      choice.message,
      { role: "tool", tool_call_id: call.id, content: '{"temp":21}' },
    ];
    const second = await user.client.chat.completions.create({ model: "gem", messages: followUp, tools });
    const expected = await geminiAnswer({ messages: followUp, tools });
    expect(second.choices[0]!.message.content).toBe(textOf(expected));
    expect(second.choices[0]!.finish_reason).toBe("stop");

    // Streamed, the call arrives whole in one delta.
    const chunks: ChatCompletionChunk[] = await collect(
      await user.client.chat.completions.create({ model: "gem", messages: ask, tools, tool_choice: "required", stream: true }),
    );
    const calls = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(calls).toEqual([
      {
        index: 0,
        id: expect.stringMatching(/^call_/),
        type: "function",
        function: { name: "get_weather", arguments: JSON.stringify(TOOL_ARGUMENTS) },
      },
    ]);
    expect(chunks.find((c) => c.choices[0]?.finish_reason)!.choices[0]!.finish_reason).toBe("tool_calls");
    const s = await settled([gw], user.id, 3);
    expect(s.logs.every((l) => l.usage_source === "upstream" && l.provider === "gem")).toBe(true);
  });

  it("without usageMetadata, shows and bills the same local count", async () => {
    const user = await freshUser();
    const answer = await user.client.chat.completions.create({ model: "gem-no-usage", messages });
    expect(answer.usage!.completion_tokens).toBeGreaterThan(0);
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({
      usage_source: "estimated",
      input_tokens: answer.usage!.prompt_tokens,
      output_tokens: answer.usage!.completion_tokens,
      quota_charged: charge(answer.usage!.prompt_tokens, answer.usage!.completion_tokens),
    });
  });
});

describe("fallback across protocols", () => {
  it("gemini target down → the chat target answers as is; chat target down → the gemini target answers, translated", async () => {
    const user = await freshUser();
    const direct = new OpenAI({ apiKey: MOCK_KEY, baseURL: mock.baseUrl, maxRetries: 0 });
    const chatText = (await direct.chat.completions.create({ model: CHAT_MODEL, messages })).choices[0]!.message.content;
    expect((await user.client.chat.completions.create({ model: "gem-then-chat", messages })).choices[0]!.message.content).toBe(chatText);
    const gemText = textOf(await geminiAnswer({ messages }));
    const answer = await user.client.chat.completions.create({ model: "chat-then-gem", messages });
    expect(answer.choices[0]!.message.content).toBe(gemText);
    expect(answer.model).toBe("chat-then-gem");
    const streamed: ChatCompletionChunk[] = await collect(
      await user.client.chat.completions.create({ model: "chat-then-gem", messages, stream: true }),
    );
    expect(streamed.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe(gemText);
    const s = await settled([gw], user.id, 3);
    const paths = s.logs.map((l) => [l.provider, (l.fallback_path as string[]).join()]).sort();
    expect(paths).toEqual([
      ["chat", "gemDown"],
      ["gem", "chatDown"],
      ["gem", "chatDown"],
    ]);
  });
});

describe("faults and refusals", () => {
  it("a stream dropped midway ends with the error event, no [DONE]; billed once for what was delivered", async () => {
    const user = await freshUser();
    const res = await post(user.key, { model: "gem-drop", messages, stream: true });
    expect(res.status).toBe(200);
    const { events } = await readSse(res);
    expect(events.some((e) => e.data === "[DONE]")).toBe(false);
    expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ error: { code: "upstream_stream_interrupted", type: "api_error" } });
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({ status: 200, error_code: "upstream_stream_interrupted", usage_source: "estimated" });
    expect(BigInt(s.log.quota_charged as string)).toBeGreaterThan(0n);
  });

  it.each([
    [
      {
        messages: [
          { role: "user", content: "x" },
          { role: "tool", tool_call_id: "call_nope", content: "r" },
        ],
      },
      "messages[1].tool_call_id",
    ],
    [
      { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url: "file:///etc/passwd" } }] }] },
      "messages[0].content[0].image_url.url",
    ],
    [{ messages: [{ role: "user", content: 42 }] }, "messages[0].content"],
    [{ messages: [{ role: "system", content: "only a system prompt" }] }, "messages"],
  ])("what a gemini target cannot take is refused with 400 before anything is held (%#)", async (body, param) => {
    const user = await freshUser();
    const res = await post(user.key, { model: "gem", ...body });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { type: "invalid_request_error", code: "invalid_value", param } });
    const holds = await gw.db.pool.query("select 1 from quota_holds h join quota_accounts a on a.id = h.account_id where a.user_id = $1", [
      user.id,
    ]);
    expect(holds.rowCount).toBe(0);
  });

  it("the SDK raises a refusal as an APIError with status 400", async () => {
    const user = await freshUser();
    const err = await user.client.chat.completions
      .create({ model: "gem", messages: [{ role: "tool", tool_call_id: "x", content: "r" }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(APIError);
    expect((err as APIError).status).toBe(400);
  });
});

describe("images from the mock upstream's Gemini image model", () => {
  const request = (stream: boolean) => ({
    model: "gem",
    messages: [{ role: "user", content: "Draw a lighthouse" }],
    modalities: ["text", "image"],
    stream,
    ...(stream ? { stream_options: { include_usage: true } } : {}),
  });
  type Image = { type: string; image_url: { url: string } };
  /** The PNG bytes of a delivered data: URI (the mock draws PNGs; the type must follow the bytes). */
  const pngOf = (image: Image) => {
    expect(image.type).toBe("image_url");
    const match = /^data:image\/png;base64,([A-Za-z0-9+/]+=*)$/.exec(image.image_url.url);
    expect(match).not.toBeNull();
    const bytes = Buffer.from(match![1]!, "base64");
    expect(bytes.subarray(1, 4).toString("latin1")).toBe("PNG");
    return bytes;
  };

  it("JSON: the text and the image, delivered as a PNG data: URI; billed by the chat rule on the usage Gemini reported", async () => {
    const user = await freshUser();
    const res = await post(user.key, request(false));
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      choices: { message: { content: string; images: Image[] } }[];
      usage: { prompt_tokens: number; completion_tokens: number };
    };
    expect(validateOpenAI("CreateChatCompletionResponse", body)).toEqual([]);
    expect(body.choices[0]!.message.content).toMatch(/^Mock image [0-9a-f]{8}\.$/);
    expect(body.choices[0]!.message.images).toHaveLength(1);
    pngOf(body.choices[0]!.message.images[0]!);
    // The image's tokens are output tokens like any other: the chat rule bills what Gemini reported.
    expect(body.usage.completion_tokens).toBeGreaterThan(1000);
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({
      status: 200,
      usage_source: "upstream",
      input_tokens: body.usage.prompt_tokens,
      output_tokens: body.usage.completion_tokens,
      quota_charged: charge(body.usage.prompt_tokens, body.usage.completion_tokens),
    });
  });

  it("stream: the image in delta.images as a PNG data: URI, the usage chunk, [DONE]; billed the same way", async () => {
    const user = await freshUser();
    const { events, broken } = await readSse(await post(user.key, request(true)));
    expect(broken).toBe(false);
    expect(events.at(-1)!.data).toBe("[DONE]");
    const chunks = events
      .slice(0, -1)
      .map((e) => JSON.parse(e.data) as ChatCompletionChunk & { choices: { delta: { images?: Image[] } }[] });
    for (const chunk of chunks) expect(validateOpenAI("CreateChatCompletionStreamResponse", chunk)).toEqual([]);
    const delivered = chunks.flatMap((c) => c.choices[0]?.delta.images ?? []);
    expect(delivered).toHaveLength(1);
    pngOf(delivered[0]!);
    const usage = chunks.at(-1)!.usage!;
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({
      streamed: true,
      usage_source: "upstream",
      quota_charged: charge(usage.prompt_tokens, usage.completion_tokens),
    });
  });
});

describe("images from a Gemini image model", () => {
  const png = MOCK_IMAGES.png.toString("base64");
  const pngUri = `data:image/png;base64,${png}`;
  const usageMetadata = { promptTokenCount: 9, candidatesTokenCount: 1300, totalTokenCount: 1309 };
  /** PNG bytes declared as WebP: what the client gets is typed by the bytes. */
  const imagePart = (data = png) => ({ inlineData: { mimeType: "image/webp", data } });
  const answer = (parts: object[], final: boolean) => ({
    candidates: [{ content: { role: "model", parts }, ...(final ? { finishReason: "STOP" } : {}), index: 0 }],
    ...(final ? { usageMetadata } : { usageMetadata: { promptTokenCount: 9, totalTokenCount: 9 } }),
    modelVersion: "gemini-image",
    responseId: "img-1",
  });
  const sse = (...chunks: object[]) => chunks.map((c) => `data: ${JSON.stringify(c)}\r\n\r\n`).join("");
  const imageRequest = (stream: boolean) => ({
    model: "gem-image",
    messages: [{ role: "user", content: "Draw a square" }],
    modalities: ["text", "image"],
    stream,
  });

  it("JSON: asks for TEXT and IMAGE; the image arrives in message.images as a data: URI typed by its bytes", async () => {
    const user = await freshUser();
    const upstreamAnswer = answer([{ text: "Here:" }, imagePart()], true);
    expect(validateGemini("GenerateContentResponse", upstreamAnswer)).toEqual([]);
    images.answers = [jsonAnswer(upstreamAnswer)];
    images.requests.length = 0;
    const res = await post(user.key, imageRequest(false));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { model: string; choices: { message: { content: string; images: unknown[] } }[]; usage: object };
    expect(validateOpenAI("CreateChatCompletionResponse", body)).toEqual([]);
    expect(body.model).toBe("gem-image");
    expect(body.choices[0]!.message).toMatchObject({ content: "Here:", images: [{ type: "image_url", image_url: { url: pngUri } }] });
    expect(body.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 1300 });
    const sent = JSON.parse(images.requests[0]!.body) as { generationConfig: object };
    expect(images.requests[0]!.path).toBe(`/v1beta/models/${GEMINI_MODEL}:generateContent`);
    expect(sent.generationConfig).toEqual({ responseModalities: ["TEXT", "IMAGE"] });
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({ status: 200, usage_source: "upstream", quota_charged: charge(9, 1300) });
  });

  it("stream: the image arrives in delta.images, typed by its bytes", async () => {
    const user = await freshUser();
    const chunks = [answer([{ text: "Here:" }], false), answer([imagePart()], true)];
    for (const c of chunks) expect(validateGemini("GenerateContentResponse", c)).toEqual([]);
    images.answers = [sseAnswer(sse(...chunks))];
    const res = await post(user.key, Object.assign(imageRequest(true), { stream_options: { include_usage: true } }));
    const { events, broken } = await readSse(res);
    expect(broken).toBe(false);
    expect(events.at(-1)!.data).toBe("[DONE]");
    const parsed = events
      .slice(0, -1)
      .map((e) => JSON.parse(e.data) as ChatCompletionChunk & { choices: { delta: { images?: unknown[] } }[] });
    for (const chunk of parsed) expect(validateOpenAI("CreateChatCompletionStreamResponse", chunk)).toEqual([]);
    expect(parsed.flatMap((c) => c.choices[0]?.delta.images ?? [])).toEqual([{ type: "image_url", image_url: { url: pngUri } }]);
    expect(parsed.at(-1)!.usage).toMatchObject({ prompt_tokens: 9, completion_tokens: 1300 });
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({ streamed: true, usage_source: "upstream", quota_charged: charge(9, 1300), error_code: null });
  });

  it("JSON, bytes that are no image → 502 upstream_invalid_output, nothing charged", async () => {
    const user = await freshUser();
    images.answers = [jsonAnswer(answer([{ text: "Here:" }, imagePart(Buffer.from("not an image at all").toString("base64"))], true))];
    const res = await post(user.key, imageRequest(false));
    expect(res.status).toBe(502);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ error: { code: "upstream_invalid_output", type: "api_error" } });
    expect(text).not.toContain("Here:");
    const s = await settled([gw], user.id);
    expect(s.hold).toMatchObject({ status: "voided", charged: null });
    expect(s.log).toMatchObject({ status: 502, error_code: "upstream_invalid_output", quota_charged: "0" });
  });

  it("stream, invalid base64: the text before it is delivered and billed by the local count, then the error event", async () => {
    const user = await freshUser();
    images.answers = [sseAnswer(sse(answer([{ text: "Here:" }], false), answer([imagePart("%%%not-base64")], true)))];
    const res = await post(user.key, imageRequest(true));
    const { events } = await readSse(res);
    expect(events.some((e) => e.data === "[DONE]")).toBe(false);
    expect(JSON.parse(events.at(-1)!.data)).toMatchObject({ error: { code: "upstream_invalid_output", type: "api_error" } });
    const delivered = events.slice(0, -1).map((e) => JSON.parse(e.data) as ChatCompletionChunk);
    expect(delivered.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("Here:");
    const s = await settled([gw], user.id);
    expect(s.log).toMatchObject({ status: 200, error_code: "upstream_invalid_output", usage_source: "estimated" });
    expect(Number(s.log.output_tokens)).toBeLessThan(1300);
  });
});
