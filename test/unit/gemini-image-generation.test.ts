import { describe, expect, it } from "vitest";
import { classifyImageUsage, imageBillingOf, imageQuota } from "../../src/billing/image-quota.js";
import { GatewayError } from "../../src/errors.js";
import { geminiImageAsk } from "../../src/media/gemini-image-request.js";
import { publicImageUsage } from "../../src/media/image-answer.js";
import { imageEditJsonSchema, imageGenerationSchema } from "../../src/media/image-request-schema.js";
import { validate } from "../../src/server/body.js";
import { addImageUsages } from "../../src/providers/upstream-images/add-image-usages.js";
import { geminiAnswerImages, geminiImageBody, geminiImageUsage } from "../../src/providers/gemini/image-generation.js";
import { inlineDataSpans, parseInlineDataAnswer } from "../../src/providers/gemini/inline-data-spans.js";
import { CanonicalBase64 } from "../../src/providers/upstream-images/canonical-base64.js";
import { ImageDeliveryError } from "../../src/providers/upstream-images/image-delivery.js";
import { MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";
import { validateGemini } from "../helpers/gemini-proto.js";

// The Gemini side of the image routes, as pure functions: the generateContent body asked for, the images read
// from an answer (and its refusals), the usage the image quota classifies, and the answer parsed with its base64
// left as bytes.

const PNG = MOCK_IMAGES.png.toString("base64");
const ask = { prompt: "a fox", images: [], n: 1 };

describe("geminiImageBody", () => {
  it("asks for IMAGE alone, the prompt as the one user turn's text", () => {
    const body = geminiImageBody(ask, "gemini-2.5-flash-image");
    expect(body).toEqual({ contents: [{ role: "user", parts: [{ text: "a fox" }] }], generationConfig: { responseModalities: ["IMAGE"] } });
    // imageConfig.imageSize is newer than the reference protos (which have aspectRatio only), so it is left out here.
    expect(validateGemini("GenerateContentRequest", body)).toEqual([]);
  });

  it("asks the Gemini 2.0 Flash previews for TEXT too, which they need", () => {
    for (const model of ["gemini-2.0-flash-preview-image-generation", "models/gemini-2.0-flash-exp"]) {
      expect(geminiImageBody(ask, model).generationConfig).toEqual({ responseModalities: ["TEXT", "IMAGE"] });
    }
  });

  it.each(["1:1", "16:9", "9:16", "4:3", "3:4", "4:5", "5:4", "21:9"])(
    "passes aspect ratio %s as imageConfig.aspectRatio",
    (aspectRatio) => {
      const body = geminiImageBody(Object.assign({ aspectRatio }, ask), "gemini-2.5-flash-image");
      expect(body.generationConfig).toEqual({ responseModalities: ["IMAGE"], imageConfig: { aspectRatio } });
      expect(validateGemini("GenerateContentRequest", body)).toEqual([]);
    },
  );

  it.each(["1K", "2K", "4K"])("passes image size %s as imageConfig.imageSize", (imageSize) => {
    const body = geminiImageBody(Object.assign({ imageSize, aspectRatio: "3:4" }, ask), "gemini-3-pro-image-preview");
    expect(body.generationConfig).toEqual({ responseModalities: ["IMAGE"], imageConfig: { aspectRatio: "3:4", imageSize } });
  });

  it("puts an edit's images before the prompt, as inline data", () => {
    const images = [
      { mimeType: "image/png", data: PNG },
      { mimeType: "image/jpeg", data: MOCK_IMAGES.jpeg.toString("base64") },
    ];
    const body = geminiImageBody({ prompt: "add a hat", images, n: 1 }, "gemini-2.5-flash-image");
    expect(body.contents).toEqual([
      {
        role: "user",
        parts: [{ inlineData: images[0] }, { inlineData: images[1] }, { text: "add a hat" }],
      },
    ]);
    expect(validateGemini("GenerateContentRequest", body)).toEqual([]);
  });
});

const candidate = (parts: object[], finishReason = "STOP") => ({ content: { role: "model", parts }, finishReason, index: 0 });

describe("geminiAnswerImages", () => {
  it("takes every inlineData part that is not a thought, whatever its mimeType; text is not an image", () => {
    const answer = {
      candidates: [
        candidate([
          { text: "Here it is" },
          { inlineData: { mimeType: "image/png", data: "draft" }, thought: true },
          { inlineData: { mimeType: "application/octet-stream", data: PNG } },
          { inlineData: { mimeType: "image/png", data: PNG }, thought: false },
        ]),
      ],
    };
    expect(geminiAnswerImages(answer)).toEqual([{ b64_json: PNG }, { b64_json: PNG }]);
  });

  it("an inline part without usable data is kept, to be refused by delivery (never skipped)", () => {
    expect(geminiAnswerImages({ candidates: [candidate([{ inlineData: { mimeType: "image/png" } }])] })).toEqual([{ b64_json: null }]);
  });

  it.each([
    [{ promptFeedback: { blockReason: "SAFETY" } }],
    [{ promptFeedback: { blockReason: "OTHER" }, candidates: [] }],
    [{ candidates: [{ finishReason: "IMAGE_SAFETY", index: 0 }] }],
    [{ candidates: [{ finishReason: "PROHIBITED_CONTENT", index: 0 }] }],
    [{ candidates: [candidate([{ text: "I can't draw that." }], "SAFETY")] }],
  ])("%j is the client's 400 content_policy_violation, without the provider's words", (answer) => {
    const err = (() => {
      try {
        geminiAnswerImages(answer);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(GatewayError);
    expect(err).toMatchObject({ status: 400, code: "content_policy_violation", param: "prompt" });
    expect((err as Error).message).not.toContain("draw");
  });

  it.each([
    [{ candidates: [{ finishReason: "NO_IMAGE", index: 0 }] }],
    [{ candidates: [candidate([{ text: "a description instead" }])] }],
    [{ candidates: [candidate([{ text: "no" }], "IMAGE_OTHER")] }],
    [{}],
  ])("%j, without any image, is an invalid answer (502)", (answer) => {
    expect(() => geminiAnswerImages(answer)).toThrow(ImageDeliveryError);
  });
});

describe("geminiImageUsage: Gemini's usageMetadata for the image quota", () => {
  const details = (text: number, image = 0) => [
    ...(text > 0 ? [{ modality: "TEXT", tokenCount: text }] : []),
    ...(image > 0 ? [{ modality: "IMAGE", tokenCount: image }] : []),
  ];

  it("the spec's check through the conversion: multiplier 27.5, 100 text input, 2000 image output → 55,459", () => {
    const usage = geminiImageUsage({
      promptTokenCount: 100,
      candidatesTokenCount: 2000,
      totalTokenCount: 2100,
      promptTokensDetails: details(100),
      candidatesTokensDetails: details(0, 2000),
    });
    expect(usage).toEqual({
      input_tokens: 100,
      output_tokens: 2000,
      total_tokens: 2100,
      input_tokens_details: { text_tokens: 100, image_tokens: 0 },
      output_tokens_details: { text_tokens: 0, image_tokens: 2000 },
    });
    const billing = imageBillingOf(usage, 1, "gemini-2.5-flash-image", ["gemini-2.5-flash-image"]);
    expect(billing.kind).toBe("native");
    expect(imageQuota(billing, { size: undefined, kind: "generation" }, { tokenMultiplier: 27.5, groupMultiplier: 1 })).toBe(55_459n);
    // The client sees it as a complete ImageGenUsage.
    expect(publicImageUsage(usage)).toEqual(usage);
  });

  it("image input, cache split, thoughts and text output all count; nothing is priced below what was reported", () => {
    const usage = geminiImageUsage({
      promptTokenCount: 600,
      cachedContentTokenCount: 300,
      candidatesTokenCount: 1300,
      thoughtsTokenCount: 90,
      totalTokenCount: 1990,
      promptTokensDetails: details(84, 516),
      cacheTokensDetails: details(42, 258),
      candidatesTokensDetails: details(10, 1290),
    });
    expect(classifyImageUsage(usage)).toEqual({
      kind: "native",
      usage: { textInput: 84, imageInput: 516, cachedTextInput: 42, cachedImageInput: 258, output: 1390 },
    });
  });

  it("tool-use prompt tokens are input, split by their own list", () => {
    const usage = geminiImageUsage({
      promptTokenCount: 10,
      toolUsePromptTokenCount: 5,
      candidatesTokenCount: 1290,
      totalTokenCount: 1305,
      promptTokensDetails: details(10),
      toolUsePromptTokensDetails: details(5),
    });
    expect(classifyImageUsage(usage)).toMatchObject({ kind: "native", usage: { textInput: 15, output: 1290 } });
    const unsplit = geminiImageUsage({
      promptTokenCount: 10,
      toolUsePromptTokenCount: 5,
      candidatesTokenCount: 1290,
      totalTokenCount: 1305,
      promptTokensDetails: details(10),
    });
    expect(classifyImageUsage(unsplit)).toMatchObject({ kind: "fallback", reason: "missing_modality", totalTokens: 1305 });
  });

  it.each([
    ["no usageMetadata", undefined, "absent"],
    ["no prompt split", { promptTokenCount: 6, candidatesTokenCount: 1290, totalTokenCount: 1296 }, "missing_modality"],
    [
      "a cache without its split, over both modalities",
      {
        promptTokenCount: 300,
        cachedContentTokenCount: 100,
        candidatesTokenCount: 1290,
        totalTokenCount: 1590,
        promptTokensDetails: details(42, 258),
      },
      "missing_cache_breakdown",
    ],
    [
      "no candidatesTokenCount: the image was not counted",
      { promptTokenCount: 6, totalTokenCount: 6, promptTokensDetails: details(6) },
      "inconsistent",
    ],
    [
      "an audio prompt the formula has no weight for",
      {
        promptTokenCount: 30,
        candidatesTokenCount: 1290,
        totalTokenCount: 1320,
        promptTokensDetails: [
          { modality: "TEXT", tokenCount: 6 },
          { modality: "AUDIO", tokenCount: 24 },
        ],
      },
      "inconsistent",
    ],
    [
      "a malformed entry",
      {
        promptTokenCount: 6,
        candidatesTokenCount: 1290,
        totalTokenCount: 1296,
        promptTokensDetails: [{ modality: "TEXT", tokenCount: "6" }],
      },
      "inconsistent",
    ],
    [
      "an output split that does not add up",
      {
        promptTokenCount: 6,
        candidatesTokenCount: 1290,
        totalTokenCount: 1296,
        promptTokensDetails: details(6),
        candidatesTokensDetails: details(0, 1000),
      },
      "inconsistent",
    ],
    [
      "a total that does not add up",
      { promptTokenCount: 6, candidatesTokenCount: 1290, totalTokenCount: 9, promptTokensDetails: details(6) },
      "inconsistent",
    ],
    ["a count that is not one", { promptTokenCount: -6, candidatesTokenCount: 1290, totalTokenCount: 1284 }, "inconsistent"],
  ])("%s falls back (%s)", (_what, metadata, reason) => {
    expect(classifyImageUsage(geminiImageUsage(metadata))).toMatchObject({ kind: "fallback", reason });
  });

  it("several calls add up; a split or usage only some of them report is left out, never made up", () => {
    const one = (text: number) =>
      geminiImageUsage({
        promptTokenCount: text,
        candidatesTokenCount: 1290,
        totalTokenCount: text + 1290,
        promptTokensDetails: details(text),
        candidatesTokensDetails: details(0, 1290),
      });
    const both = addImageUsages(one(6), one(6));
    expect(classifyImageUsage(both)).toEqual({
      kind: "native",
      usage: { textInput: 12, imageInput: 0, cachedTextInput: 0, cachedImageInput: 0, output: 2580 },
    });
    const bare = geminiImageUsage({ promptTokenCount: 6, candidatesTokenCount: 1290, totalTokenCount: 1296 });
    expect(classifyImageUsage(addImageUsages(one(6), bare))).toMatchObject({
      kind: "fallback",
      reason: "missing_modality",
      totalTokens: 2592,
    });
    expect(addImageUsages(one(6), undefined)).toBeUndefined();
    const broken = geminiImageUsage({ promptTokenCount: -1, candidatesTokenCount: 1290, totalTokenCount: 1289 });
    expect(classifyImageUsage(addImageUsages(one(2), broken))).toMatchObject({ kind: "fallback", reason: "inconsistent" });
  });
});

describe("parseInlineDataAnswer", () => {
  it("gives JSON.parse's answer with each canonical inlineData.data held as its bytes", () => {
    const answer = {
      candidates: [
        candidate([{ text: 'a "data" member: {"inlineData":{"data":"AAAA"}}' }, { inlineData: { mimeType: "image/png", data: PNG } }]),
        candidate([{ inlineData: { mimeType: "image/png", data: "not base64!" } }, { inlineData: { mimeType: "image/png", data: PNG } }]),
      ],
      usageMetadata: { promptTokenCount: 1 },
    };
    const bytes = Buffer.from(JSON.stringify(answer, null, 1));
    expect(inlineDataSpans(bytes)!.map(({ candidate, part }) => [candidate, part])).toEqual([
      [0, 1],
      [1, 0],
      [1, 1],
    ]);
    const { body } = parseInlineDataAnswer(bytes) as { body: typeof answer };
    const lifted = body.candidates[0]!.content.parts[1] as { inlineData: { data: unknown } };
    expect(lifted.inlineData.data).toBeInstanceOf(CanonicalBase64);
    expect((lifted.inlineData.data as CanonicalBase64).text()).toBe(PNG);
    expect(body.candidates[1]!.content.parts[0]).toEqual({ inlineData: { mimeType: "image/png", data: "not base64!" } });
    expect(body.candidates[0]!.content.parts[0]).toEqual(answer.candidates[0]!.content.parts[0]);
    expect(geminiAnswerImages(body as never).map((i) => (i.b64_json instanceof CanonicalBase64 ? i.b64_json.text() : i.b64_json))).toEqual([
      PNG,
      "not base64!",
      PNG,
    ]);
  });

  it("parses the whole answer when a member on the way is named twice", () => {
    const text = `{"candidates":[{"content":{"parts":[{"inlineData":{"data":"${PNG}","data":"AAAA"}}]}}]}`;
    expect(inlineDataSpans(Buffer.from(text))).toBeNull();
    const { body } = parseInlineDataAnswer(Buffer.from(text)) as {
      body: { candidates: { content: { parts: { inlineData: { data: string } }[] } }[] };
    };
    expect(body.candidates[0]!.content.parts[0]!.inlineData.data).toBe("AAAA");
  });
});

describe("geminiImageAsk: the client's fields on a Gemini target", () => {
  const generation = (extra: object) => validate(imageGenerationSchema, Object.assign({ model: "m", prompt: "a fox" }, extra));
  const edit = (extra: object) => validate(imageEditJsonSchema, Object.assign({ model: "m", prompt: "a fox", images: [PNG] }, extra));

  it("takes the prompt, n and image_config; drops hints and the values it honours anyway", () => {
    const body = generation({
      n: 3,
      image_config: { aspect_ratio: "21:9", image_size: "4K" },
      quality: "high",
      style: "vivid",
      moderation: "low",
      size: "auto",
      background: "opaque",
      output_format: "png",
      user: "u1",
      vendor_option: true,
    });
    expect(geminiImageAsk(body)).toEqual({ prompt: "a fox", n: 3, aspectRatio: "21:9", imageSize: "4K" });
    expect(geminiImageAsk(edit({ input_fidelity: "high", partial_images: 2, stream: false }))).toEqual({
      prompt: "a fox",
      n: 1,
      aspectRatio: undefined,
      imageSize: undefined,
    });
  });

  it.each([
    [generation({ size: "1024x1024" }), "size"],
    [generation({ background: "transparent" }), "background"],
    [generation({ output_format: "jpeg" }), "output_format"],
    [generation({ output_compression: 0 }), "output_compression"],
    [edit({ mask: PNG }), "mask"],
    [edit({ stream: true }), "stream"],
  ])("refuses what the image would visibly not honour: %j names %s", (body, param) => {
    expect(() => geminiImageAsk(body)).toThrow(expect.objectContaining({ status: 400, code: "invalid_value", param }));
  });
});
