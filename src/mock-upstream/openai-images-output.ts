import { largeMockPng, MOCK_IMAGES, type MockImageFormat } from "./mock-images.js";
import type { Faults } from "./context.js";
import type { ImageKind, ImageUsageKind } from "./openai-images-faults.js";
import { jsonEvent, type MockEvent } from "./sse.js";

/**
 * The answers of the mock's OpenAI image routes, pure: `ImagesResponse` for JSON, `image_generation.*` /
 * `image_edit.*` events for streams (docs/mock-upstream.md, "Images"). What the images are is the request's
 * `x-mock-image` choice; the usage's shape is `x-mock-image-usage`'s (absent with `x-mock-omit-usage`).
 */

const CREATED = 1735689600;
/** Where the mock serves its images (./openai-images.ts); an ID starting `missing-` 404s, `redirect-` redirects. */
export const MOCK_IMAGES_PATH = "/mock-images";
/** Where `url-redirect-private` sends a downloader: the cloud metadata address an SSRF guard must refuse. */
export const PRIVATE_TARGET = "http://169.254.169.254/latest/meta-data";

/** The faults that shape an image answer. */
type ImageFaults = Pick<Faults, "image" | "imageUsage" | "omitUsage">;

/** What the route made of the request, in the answer's terms. */
export interface ImagePlan {
  count: number;
  /** `output_format`: the formats OpenAI's answer schema names (GIF only comes from `x-mock-image: gif`). */
  format: "png" | "jpeg" | "webp";
  /** The echoed settings, within the answer schema's enums. */
  size: "1024x1024" | "1024x1536" | "1536x1024";
  quality: "low" | "medium" | "high";
  background: "transparent" | "opaque";
  /** `response_format: "url"` was asked (DALL·E's default). */
  asUrl: boolean;
  revisedPrompt?: string;
  /** The model is LARGE_IMAGE_MODEL: its PNGs are 1 MiB. */
  large: boolean;
  /** Hex of the request's digest: the served images' IDs. */
  id: string;
  partialImages: number;
  textTokens: number;
  imageTokens: number;
  outputTokens: number;
}

/** The usage, as `x-mock-image-usage` shapes it. */
export function usageOf(p: ImagePlan, kind: ImageUsageKind | undefined): object {
  const input = p.textTokens + p.imageTokens;
  const usage: Record<string, unknown> = { input_tokens: input, output_tokens: p.outputTokens, total_tokens: input + p.outputTokens };
  if (kind === "partial") return usage;
  const details: Record<string, number> = { text_tokens: p.textTokens, image_tokens: p.imageTokens };
  if (kind === "cached") details.cached_tokens = Math.floor(input / 2);
  usage.input_tokens_details = details;
  return usage;
}

/** The base64 an item or event carries, by `x-mock-image`. */
function base64Of(p: ImagePlan, kind: ImageKind | undefined): string {
  switch (kind) {
    case "gif":
    case "bmp":
    case "svg":
      return MOCK_IMAGES[kind].toString("base64");
    case "not-image":
      return Buffer.from("This is not an image.").toString("base64");
    case "invalid-base64":
      // Node's decoder would skip the stray characters and decode the rest: only a strict check refuses it.
      return `%%${MOCK_IMAGES[p.format].toString("base64")}`;
    default:
      return (p.large && p.format === "png" ? largeMockPng() : MOCK_IMAGES[p.format]).toString("base64");
  }
}

const EXTENSIONS: Record<MockImageFormat, string> = { png: "png", jpeg: "jpg", webp: "webp", gif: "gif" };

/** A served image's file name: the format by its extension, the fault by the ID's prefix. */
function servedName(p: ImagePlan, index: number, kind: ImageKind): string {
  const prefix = kind === "url-404" ? "missing-" : kind === "url-redirect-private" ? "redirect-" : "";
  return `${prefix}${p.id.slice(0, 24)}-${index}.${EXTENSIONS[p.format]}`;
}

function itemOf(p: ImagePlan, index: number, kind: ImageKind | undefined, origin: string): object {
  const link = kind === "url" || kind === "url-404" || kind === "url-redirect-private" || (p.asUrl && kind === undefined);
  const item: Record<string, string> = link
    ? { url: `${origin}${MOCK_IMAGES_PATH}/${servedName(p, index, kind ?? "url")}` }
    : kind === "data-uri"
      ? { url: `data:image/${p.format};base64,${base64Of(p, undefined)}` }
      : { b64_json: base64Of(p, kind) };
  if (p.revisedPrompt !== undefined) item.revised_prompt = p.revisedPrompt;
  return item;
}

/** The JSON answer, an `ImagesResponse`; `origin` is the mock's own, which served links point at. */
export function imagesResponse(p: ImagePlan, faults: ImageFaults, origin: string) {
  const data = Array.from({ length: p.count }, (_, i) => itemOf(p, i, faults.image, origin));
  const answer: Record<string, unknown> = {
    created: CREATED,
    data,
    background: p.background,
    output_format: p.format,
    size: p.size,
    quality: p.quality,
  };
  if (!faults.omitUsage) answer.usage = usageOf(p, faults.imageUsage);
  return answer;
}

/**
 * A stream of one image: `partial_images` partial events, then the completed one, the only one with usage.
 * `prefix` is `image_generation` or `image_edit`.
 */
export function imageEvents(p: ImagePlan, prefix: "image_generation" | "image_edit", faults: ImageFaults): MockEvent[] {
  const b64 = base64Of(p, faults.image);
  /** An event of `type` with the fields every image event has, in the reference's order. */
  const event = (type: string): Record<string, unknown> => ({
    type,
    b64_json: b64,
    created_at: CREATED,
    size: p.size,
    quality: p.quality,
    background: p.background,
    output_format: p.format,
  });
  const events: MockEvent[] = [];
  for (let i = 0; i < p.partialImages; i++) {
    const partial = event(`${prefix}.partial_image`);
    partial.partial_image_index = i;
    events.push(jsonEvent(partial, { event: `${prefix}.partial_image`, content: true }));
  }
  const completed = event(`${prefix}.completed`);
  if (!faults.omitUsage) completed.usage = usageOf(p, faults.imageUsage);
  events.push(jsonEvent(completed, { event: `${prefix}.completed` }));
  return events;
}
