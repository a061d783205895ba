import type { Faults } from "./context.js";
import type { GeminiImageFault } from "./gemini-image-faults.js";
import type { ModalityCount, Plan } from "./gemini-generate-output.js";
import { solidPng } from "./mock-images.js";
import { charTokens, digestOf } from "./mock-text.js";

/**
 * Gemini's image models on `generateContent` (docs/mock-upstream.md, "Gemini images"): a request whose
 * `generationConfig.responseModalities` holds IMAGE is answered with an `inlineData` PNG (after a text part when
 * TEXT is asked for too) and usage by modality, its settings checked as Gemini checks them. As Gemini samples, each
 * answer draws another picture (a 1×1 PNG whose colour changes from one answer to the next); everything else
 * (text, usage) is deterministic.
 */

/** The aspect ratios Gemini's image models take. */
export const GEMINI_ASPECT_RATIOS = ["1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9"];
/** `imageSize`: upper-case K only, as Gemini requires. */
export const GEMINI_IMAGE_SIZES = ["1K", "2K", "4K"];

/** What one input image costs (Gemini's price for an image up to 384 px a side, the mock's 1×1 pictures). */
export const GEMINI_INPUT_IMAGE_TOKENS = 258;
/** What one output image costs: Gemini 2.5 Flash Image's 1290 tokens, 2000 at 4K. */
export const geminiOutputImageTokens = (imageSize: string | undefined) => (imageSize === "4K" ? 2000 : 1290);

/** Not an image, declared as one: what `not-an-image` answers. */
const NOT_AN_IMAGE = Buffer.from("this is not a picture");

let drawn = 0;

/** Another colour for every picture drawn, from the request's digest and a counter. */
function picture(seed: Buffer): string {
  const n = drawn++;
  return solidPng(
    [seed[0]! ^ (n * 37), seed[1]! ^ (n * 91), seed[2]! ^ (n * 53)].map((c) => c & 0xff) as [number, number, number],
  ).toString("base64");
}

type Part = { text?: string; inlineData?: unknown };

export interface ImageRequest {
  model: string;
  contents: { parts: Part[] }[];
  modalities: readonly string[];
  imageSize: string | undefined;
}

/** The settings Gemini refuses (400 INVALID_ARGUMENT), or undefined. */
export function imageRequestProblem(
  model: string,
  config: { candidateCount?: number | undefined; imageConfig?: { aspectRatio?: unknown; imageSize?: unknown } | undefined },
): string | undefined {
  const image = config.imageConfig;
  if (image?.aspectRatio !== undefined && !GEMINI_ASPECT_RATIOS.includes(image.aspectRatio as string))
    return `* GenerateContentRequest.generation_config.image_config.aspect_ratio: unsupported aspect ratio ${JSON.stringify(image.aspectRatio)}.`;
  if (image?.imageSize !== undefined && !GEMINI_IMAGE_SIZES.includes(image.imageSize as string))
    return `* GenerateContentRequest.generation_config.image_config.image_size: unsupported image size ${JSON.stringify(image.imageSize)}.`;
  if ((config.candidateCount ?? 1) > 1) return `Multiple candidates is not enabled for models/${model}`;
  return undefined;
}

/** The answer to an image request, as the fault (if any) shapes it. */
export function imagePlan(req: ImageRequest, fault: Faults["geminiImage"]): Plan {
  const texts = req.contents.flatMap((c) => c.parts.flatMap((p) => (typeof p.text === "string" ? [p.text] : [])));
  const inputImages = req.contents.reduce((sum, c) => sum + c.parts.filter((p) => p.inlineData !== undefined).length, 0);
  const textTokens = charTokens(texts.join("").length) + 3 * req.contents.length;
  const imageTokens = inputImages * GEMINI_INPUT_IMAGE_TOKENS;
  const promptDetails: ModalityCount[] = [{ modality: "TEXT", tokenCount: textTokens }];
  if (imageTokens > 0) promptDetails.push({ modality: "IMAGE", tokenCount: imageTokens });
  const digest = digestOf([req.model, texts, inputImages]);
  const base = { model: req.model, responseId: digest.toString("hex").slice(0, 24), prompt: textTokens + imageTokens };
  const failed = failure(fault);
  if (failed) return { ...base, ...failed, parts: [], output: 0, details: { prompt: promptDetails, candidates: [] } };

  const parts: Plan["parts"] = [];
  const candidates: ModalityCount[] = [];
  if (req.modalities.includes("TEXT")) {
    const text = `Mock image ${digest.toString("hex").slice(0, 8)}.`;
    parts.push({ text });
    candidates.push({ modality: "TEXT", tokenCount: charTokens(text.length) });
  }
  const data = fault === "not-an-image" ? NOT_AN_IMAGE.toString("base64") : picture(digest);
  parts.push({ inlineData: { mimeType: "image/png", data } });
  candidates.push({ modality: "IMAGE", tokenCount: geminiOutputImageTokens(req.imageSize) });
  const output = candidates.reduce((sum, c) => sum + c.tokenCount, 0);
  const details = fault === "no-modality" ? undefined : { prompt: promptDetails, candidates };
  return { ...base, parts, output, finishReason: "STOP", ...(details ? { details } : {}) };
}

function failure(fault: GeminiImageFault | undefined): Pick<Plan, "finishReason" | "blockReason"> | undefined {
  if (fault === "blocked") return { finishReason: "STOP", blockReason: "SAFETY" };
  if (fault === "image-safety") return { finishReason: "IMAGE_SAFETY" };
  if (fault === "no-image") return { finishReason: "NO_IMAGE" };
  return undefined;
}
