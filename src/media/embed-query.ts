import { createHash } from "node:crypto";
import { z } from "zod";
import { errors } from "../errors.js";
import { validate } from "../server/body.js";
import type { ImageGenerationRequest } from "./image-request-schema.js";

// The query of GET /embed/image:{model} (docs/api.md, "Embeddable images"): a few image parameters in a URL, read
// into the generation request they stand for. A URL is short and public: lengths are bounded, every parameter is
// checked, unknown ones are refused (a typo would otherwise generate, and bill, an image that was not meant), and
// no message repeats a value (the prompt and the token are private).

/** Prompts longer than this do not fit a URL every browser and proxy keeps whole. */
export const EMBED_PROMPT_MAX = 2000;

const text = (max: number) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") })
    .min(1, { error: "must not be empty" })
    .max(max, { error: `must be at most ${max} characters` });

/** The image parameters: the query without `token`, and the body of POST /v1/embed/tokens when it binds a token. */
export const embedParams = {
  prompt: text(EMBED_PROMPT_MAX).meta({ description: "What to draw." }),
  size: text(16)
    .regex(/^(auto|[1-9]\d{1,4}x[1-9]\d{1,4})$/, { error: 'must be "auto" or WIDTHxHEIGHT, such as "1024x1024"' })
    .optional()
    .meta({ description: "The output size, as the model takes it (`1024x1024`); not with `aspect_ratio`." }),
  aspect_ratio: text(9)
    .regex(/^[1-9]\d{0,3}:[1-9]\d{0,3}$/, { error: 'must be a width:height ratio such as "16:9"' })
    .optional()
    .meta({ description: "Width:height (`16:9`), mapped to the model's closest size as `image_config.aspect_ratio` is; not with `size`." }),
  format: z
    .enum(["png", "jpeg", "webp"], { error: 'must be one of "png", "jpeg", "webp"' })
    .optional()
    .meta({ description: "The output format asked of the model (`output_format`); `Content-Type` follows the bytes." }),
  quality: text(16)
    .regex(/^[a-z]+$/, { error: "must be a lowercase word such as low, medium, high or auto" })
    .optional()
    .meta({ description: "A quality hint, when the model takes one." }),
};

export const embedQuerySchema = z.strictObject(
  Object.assign({}, embedParams, {
    token: z.string().optional().meta({ description: "An embed token from POST /v1/embed/tokens, for clients that cannot send headers." }),
  }),
  {
    error: (issue) =>
      issue.code === "unrecognized_keys"
        ? `unknown parameter: only prompt, size, aspect_ratio, format, quality and token are taken`
        : undefined,
  },
);

export type EmbedParams = Omit<z.infer<typeof embedQuerySchema>, "token">;

/** The parameters of a query (a parameter given twice is refused, naming it). */
export function parseEmbedQuery(queries: Record<string, string[]>): EmbedParams {
  const single: Record<string, string> = Object.create(null);
  for (const [name, values] of Object.entries(queries)) {
    if (values.length > 1) throw errors.badRequest(`Invalid ${name}: must be given once`, name, "invalid_value");
    single[name] = values[0]!;
  }
  return checkParams(validate(embedQuerySchema, single));
}

/** `size` and `aspect_ratio` are two ways to say one thing: a request names at most one. */
export function checkParams<T extends EmbedParams & { token?: string }>(params: T): EmbedParams {
  if (params.size !== undefined && params.aspect_ratio !== undefined) {
    throw errors.badRequest("Invalid aspect_ratio: send size or aspect_ratio, not both", "aspect_ratio", "invalid_value");
  }
  const out: EmbedParams = { prompt: params.prompt };
  if (params.size !== undefined) out.size = params.size;
  if (params.aspect_ratio !== undefined) out.aspect_ratio = params.aspect_ratio;
  if (params.format !== undefined) out.format = params.format;
  if (params.quality !== undefined) out.quality = params.quality;
  return out;
}

/** The generation request an embed stands for: one image, delivered as bytes. */
export function toGeneration(model: string, params: EmbedParams): ImageGenerationRequest {
  const request: ImageGenerationRequest = { model, prompt: params.prompt, n: 1, response_format: "b64_json" };
  if (params.size !== undefined) request.size = params.size;
  if (params.aspect_ratio !== undefined) request.image_config = { aspect_ratio: params.aspect_ratio };
  if (params.format !== undefined) request.output_format = params.format;
  if (params.quality !== undefined) request.quality = params.quality;
  return request;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** The digest of one request's parameters (what a bound token names): the same request, the same digest. */
export const paramsDigest = (model: string, params: EmbedParams): string =>
  sha256(
    JSON.stringify([model, params.prompt, params.size ?? null, params.aspect_ratio ?? null, params.format ?? null, params.quality ?? null]),
  );

/** The cache key: the user's own (another user's identical request is another entry), never the prompt in clear. */
export const cacheKey = (userId: string, digest: string): string => sha256(JSON.stringify([userId, digest]));
