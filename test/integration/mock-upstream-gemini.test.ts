import { ApiError, FunctionCallingConfigMode, type GenerateContentResponse, GoogleGenAI } from "@google/genai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MockUpstream, startMockUpstream } from "../../src/mock-upstream/server.js";
import { geminiErrorErrors, geminiResponseErrors } from "../helpers/gemini-shapes.js";
import { postJson } from "../helpers/mock-upstream-client.js";
import { readSse } from "../helpers/sse-frames.js";

const API_KEY = "AIza-mock-test";
let mock: MockUpstream;
let ai: GoogleGenAI;

beforeAll(async () => {
  mock = await startMockUpstream({ port: 0, apiKey: API_KEY });
  ai = new GoogleGenAI({ apiKey: API_KEY, httpOptions: { baseUrl: mock.url, apiVersion: "v1beta" } });
});
afterAll(async () => {
  await mock.close();
});

const hello = { model: "mock-gemini", contents: "Say hello", config: { systemInstruction: "You are terse." } };
// The SDK sends both as Content objects; each counts its parts' JSON: [{"text":"Say hello"}] is 22 characters,
// [{"text":"You are terse."}] 27. ceil(49 / 4) + 3 per content.
const HELLO_PROMPT_TOKENS = 13 + 6;
/** The same request as the SDK sends it. */
const helloBody = {
  contents: [{ role: "user", parts: [{ text: "Say hello" }] }],
  systemInstruction: { role: "user", parts: [{ text: "You are terse." }] },
};
const weatherTools = {
  tools: [{ functionDeclarations: [{ name: "get_weather" }, { name: "get_time" }] }],
};
const weather = { model: "mock-gemini", contents: "What's the weather in Paris?", config: weatherTools };

const url = (method: string, query = "") => `${mock.url}/v1beta/models/mock-gemini:${method}${query}`;
const post = (body: unknown, headers: Record<string, string> = {}, method = "generateContent", query = "") =>
  postJson(url(method, query), body, { "x-goog-api-key": API_KEY, ...headers });

/** The raw chunks of a streamed answer, each checked against the proto's shape; Gemini sends no event names. */
async function streamed(body: unknown, headers: Record<string, string> = {}) {
  const { events, broken } = await readSse(await post(body, headers, "streamGenerateContent", "?alt=sse"));
  const chunks = events.map((e) => {
    expect(e.event).toBeUndefined();
    const chunk = JSON.parse(e.data) as GenerateContentResponse;
    expect(geminiResponseErrors(chunk)).toEqual([]);
    return chunk;
  });
  return { chunks, broken };
}

const textOf = (chunk: GenerateContentResponse) => chunk.candidates?.[0]?.content?.parts?.map((p) => p.text ?? "").join("") ?? "";

describe("mock upstream: Gemini generateContent", () => {
  it("answers deterministically, with usage following the prompt rule", async () => {
    const [first, second] = await Promise.all([post(helloBody), post(helloBody)]);
    const raw = await first.text();
    expect(await second.text()).toBe(raw);
    const body = JSON.parse(raw) as GenerateContentResponse;
    expect(geminiResponseErrors(body)).toEqual([]);

    const res = await ai.models.generateContent(hello);
    expect(res.text).toMatch(/^Mock reply [0-9a-f]{8}: \w+/);
    expect(res.text).toBe(textOf(body));
    expect(res.candidates![0]!.finishReason).toBe("STOP");
    expect([res.modelVersion, res.responseId]).toEqual(["mock-gemini", body.responseId]);
    const words = res.text!.split(" ").length - 3;
    expect(res.usageMetadata).toEqual({
      promptTokenCount: HELLO_PROMPT_TOKENS,
      candidatesTokenCount: words,
      totalTokenCount: HELLO_PROMPT_TOKENS + words,
    });
    const other = await ai.models.generateContent({ ...hello, contents: "Say goodbye" });
    expect(other.text).not.toBe(res.text);
  });

  it("stops at maxOutputTokens with finishReason MAX_TOKENS and the uncapped answer's prefix", async () => {
    const full = (await ai.models.generateContent(hello)).text!;
    const capped = await ai.models.generateContent({ ...hello, config: { ...hello.config, maxOutputTokens: 3 } });
    expect(capped.candidates![0]!.finishReason).toBe("MAX_TOKENS");
    expect(capped.usageMetadata!.candidatesTokenCount).toBe(3);
    expect(full.startsWith(capped.text!)).toBe(true);
  });

  it("calls the first function when asked about the weather, following toolConfig", async () => {
    const res = await ai.models.generateContent(weather);
    expect(res.functionCalls).toEqual([{ name: "get_weather", args: { location: "Paris" } }]);
    expect(res.candidates![0]!.finishReason).toBe("STOP");
    // ceil(("get_weather" + '{"location":"Paris"}').length / 4)
    expect(res.usageMetadata!.candidatesTokenCount).toBe(8);

    const none = await ai.models.generateContent({
      ...weather,
      config: { ...weatherTools, toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.NONE } } },
    });
    expect(none.functionCalls).toBeUndefined();
    const allowed = await ai.models.generateContent({
      ...hello,
      config: {
        ...weatherTools,
        toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.ANY, allowedFunctionNames: ["get_time"] } },
      },
    });
    expect(allowed.functionCalls![0]!.name).toBe("get_time");

    // The function's answer goes back as a functionResponse part: nothing asks about the weather any more.
    const after = await ai.models.generateContent({
      model: "mock-gemini",
      contents: [
        { role: "user", parts: [{ text: "What's the weather?" }, { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } }] },
        { role: "model", parts: [{ functionCall: { name: "get_weather", args: { location: "Paris" } } }] },
        { role: "user", parts: [{ functionResponse: { name: "get_weather", response: { weather: "sunny" } } }] },
      ],
      config: weatherTools,
    });
    expect(after.text).toMatch(/^Mock reply/);
  });

  it.each([
    [{}, "contents"],
    [{ contents: [] }, "contents"],
    [{ contents: [{ role: "user", parts: [{}] }] }, "contents.0.parts.0"],
    [{ contents: [{ role: "user", parts: [{ text: "a", inlineData: {} }] }] }, "contents.0.parts.0"],
    [{ contents: [{ role: "system", parts: [{ text: "a" }] }] }, "contents.0.role"],
    [{ ...helloBody, generationConfig: { maxOutputTokens: 0 } }, "generationConfig.maxOutputTokens"],
  ])("answers %j with 400 INVALID_ARGUMENT naming %s", async (body, field) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    const error = (await res.json()) as { error: { status: string; message: string } };
    expect(geminiErrorErrors(error)).toEqual([]);
    expect(error.error.status).toBe("INVALID_ARGUMENT");
    expect(error.error.message).toContain(`'${field}'`);
  });

  it("answers unknown methods with 404 NOT_FOUND, and a stream without alt=sse with 400", async () => {
    const unknown = await post(helloBody, {}, "countTokens");
    expect(unknown.status).toBe(404);
    const body = (await unknown.json()) as { error: { status: string } };
    expect(geminiErrorErrors(body)).toEqual([]);
    expect(body.error.status).toBe("NOT_FOUND");
    expect((await post(helloBody, {}, "streamGenerateContent")).status).toBe(400);
  });
});

describe("mock upstream: Gemini streamGenerateContent", () => {
  it("sends one chunk per word, usage final and finishReason only on the last", async () => {
    const json = await ai.models.generateContent(hello);
    const { chunks, broken } = await streamed(helloBody);
    expect(broken).toBe(false);
    expect(chunks).toHaveLength(json.usageMetadata!.candidatesTokenCount!);
    expect(chunks.map(textOf).join("")).toBe(json.text);
    const last = chunks.at(-1)!;
    expect(last.candidates![0]!.finishReason).toBe("STOP");
    expect(last.usageMetadata).toEqual(json.usageMetadata);
    for (const chunk of chunks.slice(0, -1)) {
      expect(chunk.candidates![0]!.finishReason).toBeUndefined();
      expect(chunk.usageMetadata).toEqual({ promptTokenCount: HELLO_PROMPT_TOKENS, totalTokenCount: HELLO_PROMPT_TOKENS });
    }

    let text = "";
    for await (const chunk of await ai.models.generateContentStream(hello)) text += chunk.text ?? "";
    expect(text).toBe(json.text);
  });

  it("streams a function call as one chunk", async () => {
    const chunks = [];
    for await (const chunk of await ai.models.generateContentStream(weather)) chunks.push(chunk);
    expect(chunks).toHaveLength(1);
    expect(chunks[0]!.functionCalls).toEqual([{ name: "get_weather", args: { location: "Paris" } }]);
  });
});

describe("mock upstream: Gemini auth and faults", () => {
  it("takes the key as x-goog-api-key or ?key=, and answers others with 401 in Google's shape", async () => {
    expect((await postJson(url("generateContent", `?key=${API_KEY}`), helloBody)).status).toBe(200);
    const bearer = await postJson(url("generateContent"), helloBody, { authorization: `Bearer ${API_KEY}` });
    expect(bearer.status).toBe(401);
    const body = (await bearer.json()) as { error: { status: string } };
    expect(geminiErrorErrors(body)).toEqual([]);
    expect(body.error.status).toBe("UNAUTHENTICATED");

    const wrong = new GoogleGenAI({ apiKey: "AIza-wrong", httpOptions: { baseUrl: mock.url, apiVersion: "v1beta" } });
    const err = await wrong.models.generateContent(hello).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(401);
  });

  it("x-mock-status answers google.rpc statuses with the retry hints", async () => {
    const err = await ai.models
      .generateContent({ ...hello, config: { ...hello.config, httpOptions: { headers: { "x-mock-status": "429" } } } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).status).toBe(429);
    expect((err as ApiError).message).toContain("RESOURCE_EXHAUSTED");

    const raw = await post(helloBody, { "x-mock-status": "503", "x-mock-retry-after": "6", "x-mock-retry-after-ms": "900" });
    expect([raw.status, raw.headers.get("retry-after"), raw.headers.get("retry-after-ms")]).toEqual([503, "6", "900"]);
    const body = (await raw.json()) as { error: { status: string; code: number } };
    expect(geminiErrorErrors(body)).toEqual([]);
    expect(body.error).toMatchObject({ status: "UNAVAILABLE", code: 503 });
  });

  it("x-mock-omit-usage leaves usageMetadata out of the JSON answer and every chunk", async () => {
    const json = (await (await post(helloBody, { "x-mock-omit-usage": "1" })).json()) as GenerateContentResponse;
    expect(json).not.toHaveProperty("usageMetadata");
    const { chunks } = await streamed(helloBody, { "x-mock-omit-usage": "1" });
    expect(chunks.every((c) => c.usageMetadata === undefined)).toBe(true);
    expect(chunks.at(-1)!.candidates![0]!.finishReason).toBe("STOP");
  });

  it("x-mock-drop-after cuts the stream after that many chunks, before any finish or final usage", async () => {
    const { chunks, broken } = await streamed(helloBody, { "x-mock-drop-after": "2" });
    expect(broken).toBe(true);
    expect(chunks).toHaveLength(2);
    expect(chunks.every((c) => c.candidates![0]!.finishReason === undefined)).toBe(true);
    expect(chunks.every((c) => c.usageMetadata?.candidatesTokenCount === undefined)).toBe(true);

    // Past the last chunk: every word arrives, but the cut still comes before the finish.
    const whole = await streamed(helloBody, { "x-mock-drop-after": "1000" });
    expect(whole.broken).toBe(true);
    expect(whole.chunks.length).toBeGreaterThan(2);
    expect(whole.chunks.every((c) => c.candidates![0]!.finishReason === undefined)).toBe(true);
  });

  it("x-mock-delay-ms and x-mock-chunk-delay-ms still answer in full", async () => {
    expect((await post(helloBody, { "x-mock-delay-ms": "20" })).status).toBe(200);
    const { chunks } = await streamed(helloBody, { "x-mock-chunk-delay-ms": "2" });
    expect(chunks.at(-1)!.candidates![0]!.finishReason).toBe("STOP");
  });
});
