import { errors } from "../errors.js";
import type { NeutralImageRequest } from "../providers/types.js";
import type { ImageEditRequest, ImageGenerationRequest } from "./image-request-schema.js";
import { IMAGE_CONFIG_SUPPORT, toUpstreamGeneration } from "./image-upstream-body.js";

// What an image request asks of a Gemini target (docs/api.md, "Images", the `gemini` table): the prompt, `n` and
// `image_config`. Every other OpenAI field has no Gemini counterpart: a setting the image would visibly not honour
// is refused with a 400 naming it, a hint is dropped, as are fields the gateway does not know (Gemini has no place
// for them).

/** Why a field is refused on Gemini, by field; a value listed in `dropped` is honoured anyway, so it is dropped. */
const REFUSED: Record<string, { dropped: readonly unknown[]; why: string }> = {
  size: { dropped: ["auto"], why: "Gemini takes no pixel size; use image_config.aspect_ratio and image_config.image_size" },
  background: { dropped: ["auto", "opaque"], why: "Gemini's images are opaque" },
  output_format: { dropped: ["png"], why: "Gemini answers PNG" },
  output_compression: { dropped: [], why: "Gemini answers PNG, which is not compressed by a quality" },
  mask: { dropped: [], why: "Gemini takes no mask; describe the area to change in the prompt" },
  stream: { dropped: [false], why: "Gemini image edits are not streamed" },
};

/**
 * The neutral request for a Gemini target, without an edit's input images (the route fetches those once it
 * calls); a GatewayError (400 `invalid_value`) naming the first field Gemini cannot honour.
 */
export function geminiImageAsk(body: ImageGenerationRequest | ImageEditRequest): Omit<NeutralImageRequest, "images"> {
  for (const [field, rule] of Object.entries(REFUSED)) {
    const value = (body as Record<string, unknown>)[field];
    if (value === undefined || rule.dropped.includes(value)) continue;
    throw errors.badRequest(`Invalid ${field}: this model cannot honour ${JSON.stringify(value)} (${rule.why}).`, field, "invalid_value");
  }
  const config = "image_config" in body ? toUpstreamGeneration(body, IMAGE_CONFIG_SUPPORT.gemini).imageConfig : undefined;
  return { prompt: body.prompt, n: body.n ?? 1, aspectRatio: config?.aspect_ratio, imageSize: config?.image_size };
}
