import { MOCK_IMAGES } from "./mock-images.js";
import type { ImageKind } from "./openai-images-faults.js";
import { MOCK_IMAGES_PATH } from "./openai-images-output.js";

/**
 * The picture an image-capable chat model answers with when the request's `modalities` has "image": one item of
 * `message.images` (JSON) or `delta.images` (stream), as OpenRouter and Gemini's OpenAI-compatible API send it
 * (docs/mock-upstream.md, "Images in chat answers"). `x-mock-image` picks the bad or linked forms.
 */

/** What the picture adds to `completion_tokens` (an image output costs Gemini's image models 1290 tokens). */
export const CHAT_IMAGE_TOKENS = 1290;

export const asksForImage = (modalities: readonly string[] | null | undefined): boolean => modalities?.includes("image") === true;

/**
 * A data: URI that always declares PNG, as vendors that label every picture the same way do, so that only a
 * gateway that types images by their bytes gets the GIF, BMP and SVG kinds right.
 */
const pngLabelled = (bytes: Buffer, prefix = "") => `data:image/png;base64,${prefix}${bytes.toString("base64")}`;

/** The image's link; `id` names the served picture (hex of the request's digest). */
function linkOf(id: string, kind: ImageKind | undefined, origin: string): string {
  switch (kind) {
    case "url":
      return `${origin}${MOCK_IMAGES_PATH}/${id}-0.png`;
    case "url-404":
      return `${origin}${MOCK_IMAGES_PATH}/missing-${id}-0.png`;
    case "url-redirect-private":
      return `${origin}${MOCK_IMAGES_PATH}/redirect-${id}-0.png`;
    case "gif":
    case "bmp":
    case "svg":
      return pngLabelled(MOCK_IMAGES[kind]);
    case "not-image":
      return pngLabelled(Buffer.from("This is not an image."));
    case "invalid-base64":
      // Node's decoder would skip the stray characters and decode the rest: only a strict check refuses it.
      return pngLabelled(MOCK_IMAGES.png, "%%");
    default:
      // `data-uri` and no fault: the PNG itself.
      return pngLabelled(MOCK_IMAGES.png);
  }
}

/** The `images` member of the answer's message or of one stream delta. */
export function chatImages(id: string, kind: ImageKind | undefined, origin: string): object[] {
  return [{ type: "image_url", image_url: { url: linkOf(id, kind, origin) } }];
}
