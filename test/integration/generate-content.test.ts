import { ApiError, type GenerateContentResponse, GoogleGenAI } from "@google/genai";
import type OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { convertGenerateContentToChat } from "../../src/providers/gemini/convert-generate-content-to-chat.js";
import { geminiGenerateContentRequestSchema } from "../../src/providers/gemini/generate-content-request-schema.js";
import { validateGemini } from "../helpers/gemini-proto.js";
import { settled } from "../helpers/metering-checks.js";
import { charge, MOCK_KEY, startProtocolGateway, type ProtocolGateway } from "../helpers/protocol-gateway.js";
import { readSse } from "../helpers/sse-frames.js";

// POST /compatible/v1beta/models/{model}:generateContent and :streamGenerateContent?alt=sse through the official
// Gemini SDK (baseUrl = the gateway root + /compatible, apiVersion v1beta): native to a gemini provider and
// translated to and from an openai one, JSON and streams, billed once from usageMetadata, fallback across
// protocols, streams dropped midway, and how the SDK surfaces the gateway's errors.

let pg: ProtocolGateway;
let key: string;
let ai: GoogleGenAI;
let directGemini: GoogleGenAI;

beforeAll(async () => {
  pg = await startProtocolGateway("gemini");
  directGemini = new GoogleGenAI({ apiKey: MOCK_KEY, httpOptions: { baseUrl: pg.mock.url, apiVersion: "v1beta" } });
});

afterAll(async () => {
  await pg?.close();
});

const sdk = (apiKey: string) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: `${pg.gw.url}/compatible`, apiVersion: "v1beta" } });

async function freshUser(plan = "free") {
  const { userId, key: created } = await pg.newKey(plan);
  key = created;
  ai = sdk(key);
  return userId;
}

const hello = { contents: "Say hello to the generateContent route", config: { systemInstruction: "You are terse." } };

/** What the chat upstream answers to the translation of the request the SDK sends for `hello`. */
async function chatAnswer() {
  const request = geminiGenerateContentRequestSchema.parse({
    contents: [{ role: "user", parts: [{ text: hello.contents }] }],
    systemInstruction: { role: "user", parts: [{ text: hello.config.systemInstruction }] },
  });
  const chat = convertGenerateContentToChat(request, { model: "mock-gpt-small", stream: false });
  const answer = await pg.directChat.chat.completions.create({
    ...chat,
    model: "mock-gpt-small",
  } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  return { text: answer.choices[0]!.message.content!, usage: answer.usage! };
}

async function streamed(model: string) {
  const chunks: GenerateContentResponse[] = [];
  for await (const chunk of await ai.models.generateContentStream({ model, ...hello })) chunks.push(chunk);
  return { chunks, text: chunks.map((c) => c.text ?? "").join(""), last: chunks.at(-1)! };
}

describe("generateContent, native to a gemini provider", () => {
  it("answers with the public model as modelVersion and bills usageMetadata once", async () => {
    const userId = await freshUser();
    const answer = await ai.models.generateContent({ model: "native", ...hello });
    const expected = await directGemini.models.generateContent({ model: "mock-gemini", ...hello });
    expect(answer.modelVersion).toBe("native");
    expect(answer.text).toBe(expected.text);
    expect(answer.usageMetadata).toEqual(expected.usageMetadata);
    const { promptTokenCount, candidatesTokenCount } = expected.usageMetadata!;
    const s = await settled([pg.gw], userId);
    expect(s.log).toMatchObject({
      route: "/compatible/v1beta/models/{model}:generateContent",
      client_protocol: "gemini",
      provider: "native",
      usage_source: "upstream",
      input_tokens: promptTokenCount,
      output_tokens: candidatesTokenCount,
      quota_charged: charge(promptTokenCount!, candidatesTokenCount!),
      streamed: false,
    });
  });

  it("streams chunks with the public model and bills the final chunk's usage", async () => {
    const userId = await freshUser();
    const { chunks, text, last } = await streamed("native");
    const expected = await directGemini.models.generateContent({ model: "mock-gemini", ...hello });
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.every((c) => c.modelVersion === "native")).toBe(true);
    expect(text).toBe(expected.text);
    expect(last.usageMetadata).toEqual(expected.usageMetadata);
    const s = await settled([pg.gw], userId);
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
    const answer = await ai.models.generateContent({ model: "org/chat", ...hello });
    const expected = await chatAnswer();
    expect(answer.text).toBe(expected.text);
    expect(answer.modelVersion).toBe("org/chat");
    expect(answer.usageMetadata).toMatchObject({
      promptTokenCount: expected.usage.prompt_tokens,
      candidatesTokenCount: expected.usage.completion_tokens,
    });
    const s = await settled([pg.gw], userId);
    expect(s.log).toMatchObject({
      public_model: "org/chat",
      provider: "chat",
      usage_source: "upstream",
      quota_charged: charge(expected.usage.prompt_tokens, expected.usage.completion_tokens),
    });
  });

  it("streams the chat answer as Gemini chunks, the last with the finish reason and the billed usage", async () => {
    const userId = await freshUser();
    const res = await fetch(`${pg.gw.url}/compatible/v1beta/models/org/chat:streamGenerateContent?alt=sse`, {
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
    const { text, last } = await streamed("org/chat");
    const expected = await chatAnswer();
    expect(text).toBe(expected.text);
    expect(last.candidates![0]!.finishReason).toBe("STOP");
    expect(last.usageMetadata).toMatchObject({
      promptTokenCount: expected.usage.prompt_tokens,
      candidatesTokenCount: expected.usage.completion_tokens,
    });
    const s = await settled([pg.gw], userId, 2);
    const sdkLog = s.logs.find((l) => l.input_tokens === expected.usage.prompt_tokens)!;
    expect(sdkLog).toMatchObject({
      usage_source: "upstream",
      quota_charged: charge(expected.usage.prompt_tokens, expected.usage.completion_tokens),
    });
  });

  it("without upstream usage, shows and bills the same local count", async () => {
    const userId = await freshUser();
    const { last } = await streamed("chat-no-usage");
    const { promptTokenCount, candidatesTokenCount } = last.usageMetadata!;
    expect(candidatesTokenCount).toBeGreaterThan(0);
    const s = await settled([pg.gw], userId);
    expect(s.log).toMatchObject({ usage_source: "estimated", input_tokens: promptTokenCount, output_tokens: candidatesTokenCount });
    expect(s.log.quota_charged).toBe(charge(promptTokenCount!, candidatesTokenCount!));
  });
});

describe("fallback across protocols", () => {
  it("gemini target down → the chat target answers, translated; chat target down → gemini answers natively", async () => {
    const userId = await freshUser();
    expect((await ai.models.generateContent({ model: "to-chat", ...hello })).text).toBe((await chatAnswer()).text);
    const native = (await directGemini.models.generateContent({ model: "mock-gemini", ...hello })).text;
    expect((await ai.models.generateContent({ model: "to-native", ...hello })).text).toBe(native);
    expect((await streamed("to-native")).text).toBe(native);
    const s = await settled([pg.gw], userId, 3);
    const paths = s.logs.map((l) => [l.provider, (l.fallback_path as string[]).join()]).sort();
    expect(paths).toEqual([
      ["chat", "nativeDown"],
      ["native", "chatDown"],
      ["native", "chatDown"],
    ]);
  });
});

describe("streams dropped midway", () => {
  it.each(["native-drop", "chat-drop"])("%s: the SDK raises the in-band error; billed once for what was delivered", async (model) => {
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
    const s = await settled([pg.gw], userId);
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
      [() => sdk("gw_wrong").models.generateContent({ model: "native", ...hello }), 401, "Invalid or revoked API key"],
      [() => ai.models.generateContent({ model: "nope", ...hello }), 404, "The model 'nope' does not exist"],
      [
        () => ai.models.generateContent({ model: "native", contents: noMediaType }),
        400,
        "Invalid contents[0].parts[0].inlineData.mimeType",
      ],
      [() => ai.models.generateContent({ model: "other", ...hello }), 400, "served over the anthropic protocol"],
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
    const err = await failure(ai.models.generateContent({ model: "native", ...hello }));
    expect(err.status).toBe(429);
    expect(err.message).toContain("insufficient_quota");
  });

  it("a method other than the two served is 404, and a stream without alt=sse 400", async () => {
    await freshUser();
    const post = (path: string) =>
      fetch(`${pg.gw.url}/compatible/v1beta/models/${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-goog-api-key": key },
        body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hi" }] }] }),
      });
    const counted = await post("native:countTokens");
    expect(counted.status).toBe(404);
    expect(((await counted.json()) as { error: { code: string } }).error.code).toBe("unknown_route");
    const array = await post("native:streamGenerateContent");
    expect(array.status).toBe(400);
    expect(((await array.json()) as { error: { param: string } }).error.param).toBe("alt");
  });
});
