import { ApiError, type GenerateContentResponse, GoogleGenAI } from "@google/genai";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatQuota } from "../../src/billing/chat-quota.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { convertGenerateContentToChat } from "../../src/providers/gemini/convert-generate-content-to-chat.js";
import { geminiGenerateContentRequestSchema } from "../../src/providers/gemini/generate-content-request-schema.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { validateGemini } from "../helpers/gemini-proto.js";
import { countLogWrites, settled } from "../helpers/metering-checks.js";
import { readSse } from "../helpers/mock-upstream-client.js";

// POST /compatible/v1beta/models/{model}:generateContent and :streamGenerateContent?alt=sse through the official
// Gemini SDK (baseUrl = the gateway root + /compatible, apiVersion v1beta): native to a gemini provider and
// translated to and from an openai one, JSON and streams, billed once from usageMetadata, fallback across
// protocols, streams dropped midway, and how the SDK surfaces the gateway's errors.

const MOCK_KEY = "mock-upstream-key";
const RATES = { tokenMultiplier: 1, completionRatio: 3, cachedRatio: 1, groupMultiplier: 1 };
let mock: MockUpstream;
let proxy: FaultProxy;
let gw: TestGateway;
let key: string;
let ai: GoogleGenAI;
let directGemini: GoogleGenAI;
let directChat: OpenAI;
let userSeq = 0;

beforeAll(async () => {
  mock = await startMockUpstream({ apiKey: MOCK_KEY });
  proxy = await startFaultProxy(mock.url);
  // The proxy's base URLs end in /v1, as an openai provider's do; a gemini provider's base_url is the root.
  const root = (faults: Record<string, string | number>) => proxy.baseUrl(faults).replace(/\/v1$/, "");
  const via = (provider: string, model: string) => ({ provider, model });
  gw = await startTestGateway({
    config: {
      providers: {
        gemini: { protocol: "gemini", base_url: mock.url, api_key: MOCK_KEY },
        chat: { protocol: "openai", base_url: mock.baseUrl, api_key: MOCK_KEY },
        geminiDown: { protocol: "gemini", base_url: root({ "x-mock-status": 503 }), api_key: MOCK_KEY },
        chatDown: { protocol: "openai", base_url: proxy.baseUrl({ "x-mock-status": 503 }), api_key: MOCK_KEY },
        geminiDropping: { protocol: "gemini", base_url: root({ "x-mock-drop-after": 2 }), api_key: MOCK_KEY },
        chatDropping: { protocol: "openai", base_url: proxy.baseUrl({ "x-mock-drop-after": 2 }), api_key: MOCK_KEY },
        claude: { protocol: "anthropic", base_url: mock.url, api_key: MOCK_KEY },
      },
      models: {
        gem: { kind: "chat", upstream: "mock-gemini", targets: ["gemini"], completion_ratio: 3 },
        "org/gem-chat": { kind: "chat", upstream: "mock-gpt-small", targets: ["chat"], completion_ratio: 3 },
        "to-chat": { kind: "chat", upstream: "mock-gemini", targets: ["geminiDown", via("chat", "mock-gpt-small")], completion_ratio: 3 },
        "to-native": { kind: "chat", upstream: "mock-gemini", targets: [via("chatDown", "mock-gpt-small"), "gemini"], completion_ratio: 3 },
        "gem-drop": { kind: "chat", upstream: "mock-gemini", targets: ["geminiDropping"] },
        "chat-drop": { kind: "chat", upstream: "mock-gpt-small", targets: ["chatDropping"] },
        "all-down": { kind: "chat", upstream: "mock-gemini", targets: ["geminiDown"] },
        claude: { kind: "chat", upstream: "mock-claude", targets: ["claude"] },
      },
      plans: { free: { daily_tokens: 1_000_000, context_limit: 128_000 }, tiny: { daily_tokens: 10, context_limit: 128_000 } },
    },
  });
  countLogWrites(gw);
  directGemini = new GoogleGenAI({ apiKey: MOCK_KEY, httpOptions: { baseUrl: mock.url, apiVersion: "v1beta" } });
  directChat = new OpenAI({ apiKey: MOCK_KEY, baseURL: mock.baseUrl, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await proxy?.close();
  await mock?.close();
});

const sdk = (apiKey: string) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: `${gw.url}/compatible`, apiVersion: "v1beta" } });

async function freshUser(plan = "free") {
  const user = await gw.services.auth.users.create({ email: `gemini-${++userSeq}@example.test`, password: "password-123", plan });
  ({ key } = await gw.services.auth.apiKeys.create({ user: user.id }));
  ai = sdk(key);
  return user.id;
}

const hello = { contents: "Say hello to the generateContent route", config: { systemInstruction: "You are terse." } };

/** What the chat upstream answers to the translation of the request the SDK sends for `hello`. */
async function chatAnswer() {
  const request = geminiGenerateContentRequestSchema.parse({
    contents: [{ role: "user", parts: [{ text: hello.contents }] }],
    systemInstruction: { role: "user", parts: [{ text: hello.config.systemInstruction }] },
  });
  const chat = convertGenerateContentToChat(request, { model: "mock-gpt-small", stream: false });
  const answer = await directChat.chat.completions.create({ ...chat, model: "mock-gpt-small" } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  return { text: answer.choices[0]!.message.content!, usage: answer.usage! };
}

async function streamed(model: string) {
  const chunks: GenerateContentResponse[] = [];
  for await (const chunk of await ai.models.generateContentStream({ model, ...hello })) chunks.push(chunk);
  return { chunks, text: chunks.map((c) => c.text ?? "").join(""), last: chunks.at(-1)! };
}

const charge = (prompt: number, completion: number) => String(chatQuota({ promptTokens: prompt, completionTokens: completion, cachedTokens: 0 }, RATES));

describe("generateContent, native to a gemini provider", () => {
  it("answers with the public model as modelVersion and bills usageMetadata once", async () => {
    const userId = await freshUser();
    const answer = await ai.models.generateContent({ model: "gem", ...hello });
    const expected = await directGemini.models.generateContent({ model: "mock-gemini", ...hello });
    expect(answer.modelVersion).toBe("gem");
    expect(answer.text).toBe(expected.text);
    expect(answer.usageMetadata).toEqual(expected.usageMetadata);
    const { promptTokenCount, candidatesTokenCount } = expected.usageMetadata!;
    const s = await settled([gw], userId);
    expect(s.log).toMatchObject({
      route: "/compatible/v1beta/models/{model}:generateContent",
      client_protocol: "gemini",
      provider: "gemini",
      usage_source: "upstream",
      input_tokens: promptTokenCount,
      output_tokens: candidatesTokenCount,
      quota_charged: charge(promptTokenCount!, candidatesTokenCount!),
      streamed: false,
    });
  });

  it("streams chunks with the public model and bills the final chunk's usage", async () => {
    const userId = await freshUser();
    const { chunks, text, last } = await streamed("gem");
    const expected = await directGemini.models.generateContent({ model: "mock-gemini", ...hello });
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.every((c) => c.modelVersion === "gem")).toBe(true);
    expect(text).toBe(expected.text);
    expect(last.usageMetadata).toEqual(expected.usageMetadata);
    const s = await settled([gw], userId);
    expect(s.log).toMatchObject({
      route: "/compatible/v1beta/models/{model}:streamGenerateContent",
      streamed: true,
      usage_source: "upstream",
      quota_charged: charge(expected.usageMetadata!.promptTokenCount!, expected.usageMetadata!.candidatesTokenCount!),
    });
  });
});

describe("generateContent, translated to an openai provider (a model ID with a slash)", () => {
  it("answers a GenerateContentResponse saying what the chat upstream said, with its usage", async () => {
    const userId = await freshUser();
    const answer = await ai.models.generateContent({ model: "org/gem-chat", ...hello });
    const expected = await chatAnswer();
    expect(answer.text).toBe(expected.text);
    expect(answer.modelVersion).toBe("org/gem-chat");
    expect(answer.usageMetadata).toMatchObject({ promptTokenCount: expected.usage.prompt_tokens, candidatesTokenCount: expected.usage.completion_tokens });
    const s = await settled([gw], userId);
    expect(s.log).toMatchObject({
      public_model: "org/gem-chat",
      provider: "chat",
      usage_source: "upstream",
      quota_charged: charge(expected.usage.prompt_tokens, expected.usage.completion_tokens),
    });
  });

  it("streams the chat answer as Gemini chunks, the last with the finish reason and the billed usage", async () => {
    const userId = await freshUser();
    const res = await fetch(`${gw.url}/compatible/v1beta/models/org/gem-chat:streamGenerateContent?alt=sse`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-goog-api-key": key },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: hello.contents }] }] }),
    });
    const { events, broken } = await readSse(res);
    expect(broken).toBe(false);
    for (const e of events) {
      expect(e.event).toBeUndefined();
      expect(validateGemini("GenerateContentResponse", JSON.parse(e.data))).toEqual([]);
    }
    const { text, last } = await streamed("org/gem-chat");
    const expected = await chatAnswer();
    expect(text).toBe(expected.text);
    expect(last.candidates![0]!.finishReason).toBe("STOP");
    expect(last.usageMetadata).toMatchObject({ promptTokenCount: expected.usage.prompt_tokens, candidatesTokenCount: expected.usage.completion_tokens });
    const s = await settled([gw], userId, 2);
    const sdkLog = s.logs.find((l) => l.input_tokens === expected.usage.prompt_tokens)!;
    expect(sdkLog).toMatchObject({ usage_source: "upstream", quota_charged: charge(expected.usage.prompt_tokens, expected.usage.completion_tokens) });
  });
});

describe("fallback across protocols", () => {
  it("gemini target down → the chat target answers, translated; chat target down → gemini answers natively", async () => {
    const userId = await freshUser();
    expect((await ai.models.generateContent({ model: "to-chat", ...hello })).text).toBe((await chatAnswer()).text);
    const native = (await directGemini.models.generateContent({ model: "mock-gemini", ...hello })).text;
    expect((await ai.models.generateContent({ model: "to-native", ...hello })).text).toBe(native);
    expect((await streamed("to-native")).text).toBe(native);
    const s = await settled([gw], userId, 3);
    const paths = s.logs.map((l) => [l.provider, (l.fallback_path as string[]).join()]).sort();
    expect(paths).toEqual([
      ["chat", "geminiDown"],
      ["gemini", "chatDown"],
      ["gemini", "chatDown"],
    ]);
  });
});

describe("streams dropped midway", () => {
  it.each(["gem-drop", "chat-drop"])("%s: the SDK raises the in-band error; billed once for what was delivered", async (model) => {
    const userId = await freshUser();
    const err = await streamed(model).then(
      () => null,
      (e: unknown) => e as Error,
    );
    // The error arrives as Google writes one, a bare JSON object: the SDK raises it as an ApiError when it reads
    // it on its own, and as an incomplete segment when it reads it together with the chunk before.
    expect(err).toBeInstanceOf(Error);
    expect(err!.message).toMatch(/The upstream stream ended unexpectedly|Incomplete JSON segment/);
    if (err instanceof ApiError) expect(err.status).toBe(502);
    const s = await settled([gw], userId);
    expect(s.log).toMatchObject({ status: 200, error_class: "upstream_error", usage_source: "estimated" });
    expect(BigInt(s.log.quota_charged as string)).toBeGreaterThan(0n);
  });
});

describe("errors as the Gemini SDK surfaces them", () => {
  const failure = (call: Promise<unknown>) =>
    call.then(
      () => expect.fail("the call succeeded"),
      (e: unknown) => e as ApiError,
    );

  it("gives the status and the gateway's message", async () => {
    await freshUser();
    // An image part without a media type passes the SDK's own checks and fails the gateway's.
    const noMediaType = [{ role: "user", parts: [{ inlineData: { mimeType: "", data: "aGk=" } }] }];
    const cases: [() => Promise<unknown>, number, string][] = [
      [() => sdk("gw_wrong").models.generateContent({ model: "gem", ...hello }), 401, "Invalid or revoked API key"],
      [() => ai.models.generateContent({ model: "nope", ...hello }), 404, "The model 'nope' does not exist"],
      [() => ai.models.generateContent({ model: "gem", contents: noMediaType }), 400, "Invalid contents[0].parts[0].inlineData.mimeType"],
      [() => ai.models.generateContent({ model: "claude", ...hello }), 400, "served over the anthropic protocol"],
      [() => ai.models.generateContent({ model: "all-down", ...hello }), 502, "The upstream provider answered 503"],
      [() => ai.models.generateContentStream({ model: "all-down", ...hello }), 502, "The upstream provider answered 503"],
    ];
    for (const [call, status, message] of cases) {
      const err = await failure(call());
      expect(err, message).toBeInstanceOf(ApiError);
      expect(err.status).toBe(status);
      expect(err.message).toContain(message);
      expect(err.message).not.toContain("upstream-secret-detail");
    }
  });

  it("an exhausted quota is a 429", async () => {
    await freshUser("tiny");
    const err = await failure(ai.models.generateContent({ model: "gem", ...hello }));
    expect(err.status).toBe(429);
    expect(err.message).toContain("insufficient_quota");
  });

  it("a method other than the two served is 404, and a stream without alt=sse 400", async () => {
    await freshUser();
    const post = (path: string) =>
      fetch(`${gw.url}/compatible/v1beta/models/${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-goog-api-key": key },
        body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
      });
    const counted = await post("gem:countTokens");
    expect(counted.status).toBe(404);
    expect(((await counted.json()) as { error: { code: string } }).error.code).toBe("unknown_route");
    const array = await post("gem:streamGenerateContent");
    expect(array.status).toBe(400);
    expect(((await array.json()) as { error: { param: string } }).error.param).toBe("alt");
  });
});
