import { errors } from "../../errors.js";
import { asArray, asObject, tokenCount } from "../json-guards.js";
import { CanonicalBase64 } from "../upstream-images/canonical-base64.js";
import { INCONSISTENT_COUNT } from "../upstream-images/add-image-usages.js";
import { ImageDeliveryError, type UpstreamImage } from "../upstream-images/image-delivery.js";
import type { NeutralImageRequest } from "../types.js";

// Image generation and edits on Gemini (docs/api.md, "Images"): a `generateContent` request asking for the IMAGE
// modality, and its answer read as the images of an ImagesResponse with the usage the image quota classifies
// (src/billing/image-quota.ts). Pure: the adapter (./images.ts) sends and reads, the route decides what is asked.

/**
 * The Gemini 2.0 Flash image previews answer IMAGE only beside TEXT (they refuse `["IMAGE"]`); later image models
 * take IMAGE alone, which keeps them from answering with text instead of a picture.
 */
const NEEDS_TEXT = /(^|\/)gemini-2\.0-flash/;

/** The body of one `generateContent` call: the input images, then the prompt, in one user turn. */
export function geminiImageBody(request: NeutralImageRequest, upstreamModel: string): Record<string, unknown> {
  const parts: Record<string, unknown>[] = request.images.map((image) => ({ inlineData: { mimeType: image.mimeType, data: image.data } }));
  parts.push({ text: request.prompt });
  const generationConfig: Record<string, unknown> = {
    responseModalities: NEEDS_TEXT.test(upstreamModel) ? ["TEXT", "IMAGE"] : ["IMAGE"],
  };
  const imageConfig: Record<string, string> = {};
  if (request.aspectRatio !== undefined) imageConfig.aspectRatio = request.aspectRatio;
  if (request.imageSize !== undefined) imageConfig.imageSize = request.imageSize;
  if (Object.keys(imageConfig).length > 0) generationConfig.imageConfig = imageConfig;
  return { contents: [{ role: "user", parts }], generationConfig };
}

/** Finish reasons of a candidate the provider's filters stopped: the prompt (or what it asked for) was refused. */
const REFUSALS = new Set([
  "SAFETY",
  "RECITATION",
  "BLOCKLIST",
  "PROHIBITED_CONTENT",
  "SPII",
  "IMAGE_SAFETY",
  "IMAGE_PROHIBITED_CONTENT",
  "IMAGE_RECITATION",
]);

const refused = () =>
  errors.badRequest(
    "The provider's safety system refused to generate this image; nothing was generated or charged. Rephrase the prompt.",
    "prompt",
    "content_policy_violation",
  );

/**
 * The images of one GenerateContentResponse: every candidate's `inlineData` parts that are not thoughts (a
 * thinking model's drafts), whatever their declared mimeType (delivery types them by their bytes); text parts are
 * not images. A blocked prompt, or no image where a candidate was stopped by a filter, is the client's 400
 * `content_policy_violation`; no image otherwise (NO_IMAGE, IMAGE_OTHER, text only) is an invalid answer (502).
 * The provider's own words (finishMessage, text) are never passed on.
 */
export function geminiAnswerImages(body: Record<string, unknown>): UpstreamImage[] {
  const blockReason = asObject(body.promptFeedback)?.blockReason;
  if (blockReason !== undefined && blockReason !== "BLOCK_REASON_UNSPECIFIED") throw refused();
  const images: UpstreamImage[] = [];
  let filtered = false;
  for (const item of asArray(body.candidates)) {
    const candidate = asObject(item);
    if (REFUSALS.has(candidate?.finishReason as string)) filtered = true;
    for (const entry of asArray(asObject(candidate?.content)?.parts)) {
      const part = asObject(entry);
      const inline = asObject(part?.inlineData);
      if (!inline || part!.thought === true) continue;
      const data = inline.data;
      // Data that is not a string is delivered as no image at all: refused (502), never skipped.
      images.push({ b64_json: data instanceof CanonicalBase64 || typeof data === "string" ? data : null });
    }
  }
  if (images.length > 0) return images;
  if (filtered) throw refused();
  throw new ImageDeliveryError("no_image");
}

/**
 * The token counts of a ModalityTokenCount list by modality; null when an entry is malformed. Gemini lists only
 * the modalities it counted, so one that is not listed has no tokens.
 */
function byModality(list: unknown): Map<string, number> | null {
  const counts = new Map<string, number>();
  for (const item of asArray(list)) {
    const entry = asObject(item);
    const modality = entry?.modality;
    // proto3 JSON leaves a zero count out.
    const count = entry?.tokenCount === undefined ? 0 : tokenCount(entry.tokenCount);
    if (typeof modality !== "string" || count === null) return null;
    counts.set(modality, (counts.get(modality) ?? 0) + count);
  }
  return counts;
}

/** A count the image quota refuses as `inconsistent`: what a malformed Gemini count becomes. */
const INCONSISTENT = INCONSISTENT_COUNT;

/** A count that proto3 JSON leaves out when it is zero. */
const zeroOmitted = (value: unknown): number => (value === undefined ? 0 : (tokenCount(value) ?? INCONSISTENT));

/** A count that must be reported: undefined when it is not, INCONSISTENT when it is not a count. */
const reported = (value: unknown): number | undefined => (value === undefined ? undefined : (tokenCount(value) ?? INCONSISTENT));

const sum = (...counts: (number | undefined)[]): number | undefined =>
  counts.includes(undefined) ? undefined : counts.includes(INCONSISTENT) ? INCONSISTENT : counts.reduce((a, b) => a! + b!, 0);

/** `{text_tokens, image_tokens}` of a modality list; any other modality makes the pair fall short of its total. */
function textAndImage(lists: unknown[], extraText = 0): Record<string, number> {
  const counts = new Map<string, number>();
  for (const list of lists) {
    const own = byModality(list);
    if (own === null) return { text_tokens: INCONSISTENT, image_tokens: INCONSISTENT };
    for (const [modality, count] of own) counts.set(modality, (counts.get(modality) ?? 0) + count);
  }
  return { text_tokens: (counts.get("TEXT") ?? 0) + extraText, image_tokens: counts.get("IMAGE") ?? 0 };
}

/**
 * Gemini's `usageMetadata` as the image usage the image quota classifies (OpenAI's ImageGenUsage shape, the
 * spec's "complete native token usage" when every part is there; docs/billing.md, "Image quota"):
 *   input_tokens   promptTokenCount + toolUsePromptTokenCount, split by promptTokensDetails (and the tool-use list);
 *   cached_tokens  cachedContentTokenCount, split by cacheTokensDetails;
 *   output_tokens  candidatesTokenCount + thoughtsTokenCount (thoughts are billed output), split by
 *                  candidatesTokensDetails with the thoughts as text;
 *   total_tokens   totalTokenCount.
 * A missing list leaves its split out, so the quota falls back (`missing_modality`, `missing_cache_breakdown`); a
 * modality other than text and image makes the split fall short of its total (`inconsistent`), as does an answer
 * without candidatesTokenCount, which cannot have counted its image. Undefined without usageMetadata (`absent`).
 */
export function geminiImageUsage(usageMetadata: unknown): Record<string, unknown> | undefined {
  const u = asObject(usageMetadata);
  if (!u) return undefined;
  const prompt = reported(u.promptTokenCount);
  const toolPrompt = zeroOmitted(u.toolUsePromptTokenCount);
  const thoughts = zeroOmitted(u.thoughtsTokenCount);
  const usage: Record<string, unknown> = {
    input_tokens: sum(prompt, toolPrompt),
    output_tokens: sum(reported(u.candidatesTokenCount), thoughts),
    total_tokens: reported(u.totalTokenCount),
  };
  const toolList = u.toolUsePromptTokensDetails;
  // Tool-use input needs its own split as much as the prompt's does.
  if (u.promptTokensDetails !== undefined && (toolPrompt === 0 || toolList !== undefined)) {
    const input: Record<string, unknown> = textAndImage([u.promptTokensDetails, toolList]);
    if (u.cachedContentTokenCount !== undefined) input.cached_tokens = reported(u.cachedContentTokenCount);
    if (u.cacheTokensDetails !== undefined) input.cached_tokens_details = textAndImage([u.cacheTokensDetails]);
    usage.input_tokens_details = input;
  }
  if (u.candidatesTokensDetails !== undefined) usage.output_tokens_details = textAndImage([u.candidatesTokensDetails], thoughts);
  return usage;
}
