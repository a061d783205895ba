import { ApiError, GoogleGenAI, Modality, type GenerateContentResponse } from "@google/genai";
import { fileTypeFromBuffer } from "file-type";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GEMINI_ASPECT_RATIOS, GEMINI_INPUT_IMAGE_TOKENS, geminiOutputImageTokens } from "../../src/mock-upstream/gemini-images.js";
import { MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";
import { type MockUpstream, startMockUpstream } from "../../src/mock-upstream/server.js";
import { validateGemini } from "../helpers/gemini-proto.js";
import { postJson } from "../helpers/mock-upstream-client.js";
import { readSse } from "../helpers/sse-frames.js";

// The mock's Gemini image models (docs/mock-upstream.md, "Gemini images"), as @google/genai and raw HTTP see them:
// inline PNG parts, usage by modality, Gemini's checks of imageConfig and candidateCount, and each fault. Every
// answer is checked against the reference protos.

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

const MODEL = "gemini-2.5-flash-image";
const imageBody = (extra: Record<string, unknown> = {}, modalities = ["IMAGE"]) => ({
  contents: [{ role: "user", parts: [{ text: "a red fox" }] }],
  generationConfig: Object.assign({ responseModalities: modalities }, extra),
});
const post = (body: unknown, headers: Record<string, string> = {}, method = "generateContent", query = "") =>
  postJson(`${mock.url}/v1beta/models/${MODEL}:${method}${query}`, body, Object.assign({ "x-goog-api-key": API_KEY }, headers));

async function answer(body: unknown, headers: Record<string, string> = {}) {
  const res = await post(body, headers);
  expect(res.status).toBe(200);
  const json = (await res.json()) as GenerateContentResponse & Record<string, unknown>;
  expect(validateGemini("GenerateContentResponse", json)).toEqual([]);
  return json;
}

const inlineOf = (json: GenerateContentResponse) =>
  (json.candidates?.[0]?.content?.parts ?? []).flatMap((p) => (p.inlineData ? [p.inlineData] : []));

// "a red fox" is 9 characters: ceil(9 / 4) + 3 for its one content.
const PROMPT_TEXT_TOKENS = 3 + 3;

describe("mock upstream: Gemini images", () => {
  it("answers an inline PNG with usage by modality; each answer draws another picture (@google/genai)", async () => {
    const config = { responseModalities: [Modality.IMAGE] };
    const [first, second] = await Promise.all([
      ai.models.generateContent({ model: MODEL, contents: "a red fox", config }),
      ai.models.generateContent({ model: MODEL, contents: "a red fox", config }),
    ]);
    const images = [first, second].map((res) => {
      const parts = res.candidates![0]!.content!.parts!;
      expect(parts).toHaveLength(1);
      expect(parts[0]!.inlineData!.mimeType).toBe("image/png");
      return Buffer.from(parts[0]!.inlineData!.data!, "base64");
    });
    for (const bytes of images) expect((await fileTypeFromBuffer(bytes))?.mime).toBe("image/png");
    expect(images[0]!.equals(images[1]!)).toBe(false);
    const output = geminiOutputImageTokens(undefined);
    expect(first.usageMetadata).toEqual({
      promptTokenCount: PROMPT_TEXT_TOKENS,
      candidatesTokenCount: output,
      totalTokenCount: PROMPT_TEXT_TOKENS + output,
      promptTokensDetails: [{ modality: "TEXT", tokenCount: PROMPT_TEXT_TOKENS }],
      candidatesTokensDetails: [{ modality: "IMAGE", tokenCount: output }],
    });
    expect(first.candidates![0]!.finishReason).toBe("STOP");
  });

  it("adds a text part when TEXT is asked for too; input images are counted as image input", async () => {
    const png = MOCK_IMAGES.png.toString("base64");
    const body = {
      contents: [{ role: "user", parts: [{ inlineData: { mimeType: "image/png", data: png } }, { text: "a red fox" }] }],
      generationConfig: { responseModalities: ["TEXT", "IMAGE"], imageConfig: { aspectRatio: "16:9", imageSize: "4K" } },
    };
    const json = await answer(body);
    const parts = json.candidates![0]!.content!.parts!;
    expect(parts.map((p) => Object.keys(p)[0])).toEqual(["text", "inlineData"]);
    const text = parts[0]!.text!;
    const textTokens = Math.ceil(text.length / 4);
    expect(json.usageMetadata).toMatchObject({
      promptTokenCount: PROMPT_TEXT_TOKENS + GEMINI_INPUT_IMAGE_TOKENS,
      promptTokensDetails: [
        { modality: "TEXT", tokenCount: PROMPT_TEXT_TOKENS },
        { modality: "IMAGE", tokenCount: GEMINI_INPUT_IMAGE_TOKENS },
      ],
      candidatesTokensDetails: [
        { modality: "TEXT", tokenCount: textTokens },
        { modality: "IMAGE", tokenCount: geminiOutputImageTokens("4K") },
      ],
    });
  });

  it.each(GEMINI_ASPECT_RATIOS)("takes aspectRatio %s", async (aspectRatio) => {
    expect(inlineOf(await answer(imageBody({ imageConfig: { aspectRatio, imageSize: "2K" } })))).toHaveLength(1);
  });

  it.each([
    [{ imageConfig: { aspectRatio: "7:3" } }, "aspect_ratio"],
    [{ imageConfig: { imageSize: "2k" } }, "image_size"],
    [{ imageConfig: { imageSize: "8K" } }, "image_size"],
    [{ candidateCount: 2 }, "Multiple candidates is not enabled"],
  ])("refuses %j with 400 INVALID_ARGUMENT in Google's envelope", async (config, words) => {
    const res = await post(imageBody(config));
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: { code: number; status: string; message: string } };
    expect(body.error).toMatchObject({ code: 400, status: "INVALID_ARGUMENT" });
    expect(body.error.message).toContain(words);
    const err = await ai.models
      .generateContent({ model: MODEL, contents: "a red fox", config: Object.assign({ responseModalities: [Modality.IMAGE] }, config) })
      .catch((e: unknown) => e);
    expect((err as ApiError).status).toBe(400);
  });

  it("streams the image whole in its own chunk, the last chunk with the finish and the final usage", async () => {
    const { events } = await readSse(await post(imageBody({}, ["TEXT", "IMAGE"]), {}, "streamGenerateContent", "?alt=sse"));
    const chunks = events.map((e) => JSON.parse(e.data) as GenerateContentResponse);
    for (const chunk of chunks) expect(validateGemini("GenerateContentResponse", chunk)).toEqual([]);
    expect(chunks).toHaveLength(2);
    expect(chunks[0]!.candidates![0]!.content!.parts![0]!.text).toMatch(/^Mock image/);
    const last = chunks[1]!;
    expect(inlineOf(last)).toHaveLength(1);
    expect(last.candidates![0]!.finishReason).toBe("STOP");
    expect(last.usageMetadata!.candidatesTokensDetails).toHaveLength(2);

    const sdk = ai.models.generateContentStream({ model: MODEL, contents: "a red fox", config: { responseModalities: [Modality.IMAGE] } });
    const seen: GenerateContentResponse[] = [];
    for await (const chunk of await sdk) seen.push(chunk);
    expect(seen.flatMap((c) => inlineOf(c))).toHaveLength(1);
  });

  describe("x-mock-gemini-image", () => {
    it("blocked: promptFeedback.blockReason, no candidates, the prompt's usage", async () => {
      const json = await answer(imageBody(), { "x-mock-gemini-image": "blocked" });
      expect(json.promptFeedback).toEqual({ blockReason: "SAFETY" });
      expect(json.candidates).toBeUndefined();
      expect(json.usageMetadata).toMatchObject({ promptTokenCount: PROMPT_TEXT_TOKENS, totalTokenCount: PROMPT_TEXT_TOKENS });
      const { events } = await readSse(await post(imageBody(), { "x-mock-gemini-image": "blocked" }, "streamGenerateContent", "?alt=sse"));
      expect(events).toHaveLength(1);
      expect(JSON.parse(events[0]!.data)).toMatchObject({ promptFeedback: { blockReason: "SAFETY" } });
    });

    it.each([
      ["image-safety", "IMAGE_SAFETY"],
      ["no-image", "NO_IMAGE"],
    ])("%s: a candidate without content, finished %s", async (fault, reason) => {
      const json = await answer(imageBody(), { "x-mock-gemini-image": fault });
      expect(json.candidates).toEqual([{ finishReason: reason, index: 0 }]);
      expect(json.usageMetadata!.candidatesTokenCount).toBeUndefined();
    });

    it("no-usage, no-modality, not-an-image", async () => {
      expect((await answer(imageBody(), { "x-mock-gemini-image": "no-usage" })).usageMetadata).toBeUndefined();
      const bare = (await answer(imageBody(), { "x-mock-gemini-image": "no-modality" })).usageMetadata!;
      expect(bare.promptTokensDetails).toBeUndefined();
      expect(bare.candidatesTokensDetails).toBeUndefined();
      expect(bare.candidatesTokenCount).toBe(geminiOutputImageTokens(undefined));
      const spoilt = inlineOf(await answer(imageBody(), { "x-mock-gemini-image": "not-an-image" }));
      expect(spoilt[0]!.mimeType).toBe("image/png");
      expect(await fileTypeFromBuffer(Buffer.from(spoilt[0]!.data!, "base64"))).toBeUndefined();
    });
  });
});
