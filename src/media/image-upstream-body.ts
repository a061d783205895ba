import { errors } from "../errors.js";
import type { ImageConfig, ImageEditRequest, ImageGenerationRequest } from "./image-request-schema.js";

// What a generation request becomes upstream (docs/api.md, "Images"): the client's fields as sent, without the
// gateway's own (`response_format`, `user`) and with `image_config` turned into what the provider's protocol
// takes. Values are copied whatever they are, so `output_compression: 0` stays 0.

/** How one provider protocol takes `image_config`. */
export type ImageConfigSupport =
  /** The adapter places the neutral values itself (Gemini's `generationConfig.imageConfig`). */
  | { kind: "native" }
  /**
   * Only `size` exists: `aspect_ratio` picks the closest of `sizes` (width / height) when `size` is absent and is
   * dropped otherwise; `image_size` is dropped when one of `imageSizes` (what the sizes already are), refused else.
   */
  | { kind: "size"; sizes: Readonly<Record<string, number>>; imageSizes: readonly string[] };

export const IMAGE_CONFIG_SUPPORT = {
  openai: { kind: "size", sizes: { "1024x1024": 1, "1536x1024": 1.5, "1024x1536": 1024 / 1536 }, imageSizes: ["1K"] },
  gemini: { kind: "native" },
} as const satisfies Record<"openai" | "gemini", ImageConfigSupport>;

export interface UpstreamGeneration {
  /** The upstream body's fields. */
  body: Record<string, unknown>;
  /** For a `native` protocol, the `image_config` values its adapter places; undefined otherwise. */
  imageConfig: ImageConfig | undefined;
}

const GATEWAY_FIELDS = new Set(["response_format", "user", "image_config"]);

/** The body a generation request sends upstream; a 400 naming `image_config.image_size` when the provider cannot honour it. */
export function toUpstreamGeneration(request: ImageGenerationRequest, support: ImageConfigSupport): UpstreamGeneration {
  const body: Record<string, unknown> = {};
  for (const key of Object.keys(request)) {
    if (!GATEWAY_FIELDS.has(key)) body[key] = request[key];
  }
  const config = request.image_config;
  if (!config) return { body, imageConfig: undefined };
  if (support.kind === "native") return { body, imageConfig: config };
  if (config.image_size !== undefined && !support.imageSizes.includes(config.image_size)) {
    const param = "image_config.image_size";
    const supported = support.imageSizes.map((s) => `"${s}"`).join(", ");
    throw errors.badRequest(`Invalid ${param}: this model supports only ${supported}; use size instead`, param, "invalid_value");
  }
  if (config.aspect_ratio !== undefined && request.size === undefined) body.size = closestSize(config.aspect_ratio, support.sizes);
  return { body, imageConfig: undefined };
}

/** The size whose shape is nearest the ratio, compared on a log scale so that 2:1 and 1:2 are equally far from 1:1. */
function closestSize(aspectRatio: string, sizes: Readonly<Record<string, number>>): string {
  const [width, height] = aspectRatio.split(":").map(Number) as [number, number];
  const wanted = Math.log(width / height);
  let best = "";
  let bestDistance = Infinity;
  for (const [size, ratio] of Object.entries(sizes)) {
    const distance = Math.abs(Math.log(ratio) - wanted);
    if (distance < bestDistance) {
      best = size;
      bestDistance = distance;
    }
  }
  return best;
}

/** An input image of the client's JSON edit: a string, `{image_url: "…"}` or `{image_url: {url: "…"}}`. */
type InputImage = string | { image_url: string | { url: string } };

/** OpenAI's JSON edit takes `{image_url: "…"}` (ImageRefParam): every form the gateway accepts becomes that. */
const imageRef = (image: InputImage) => ({
  image_url: typeof image === "string" ? image : typeof image.image_url === "string" ? image.image_url : image.image_url.url,
});

const EDIT_GATEWAY_FIELDS = new Set(["response_format", "user", "images", "mask"]);

/** The JSON body an edit sends upstream: the client's fields as sent, the images and mask as image references. */
export function toUpstreamEdit(request: ImageEditRequest): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const key of Object.keys(request)) {
    if (!EDIT_GATEWAY_FIELDS.has(key)) body[key] = request[key];
  }
  body.images = request.images.map(imageRef);
  if (request.mask !== undefined) body.mask = imageRef(request.mask);
  return body;
}
