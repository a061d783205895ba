import { z } from "zod";

/**
 * What the mock's image routes read of a request (docs/mock-upstream.md, "Images"). Validation is minimal, as on
 * the other routes: the fields that shape the answer; anything else (`mask`, `output_compression`, `user`, …) is
 * accepted and ignored.
 */

const common = {
  model: z.string().min(1).nullish(),
  prompt: z.string().min(1),
  n: z.number().int().min(1).max(10).nullish(),
  size: z.string().nullish(),
  quality: z.enum(["low", "medium", "high", "auto", "standard", "hd"]).nullish(),
  background: z.enum(["transparent", "opaque", "auto"]).nullish(),
  output_format: z.enum(["png", "jpeg", "webp"]).nullish(),
  response_format: z.enum(["url", "b64_json"]).nullish(),
  stream: z.boolean().nullish(),
  partial_images: z.number().int().min(0).max(3).nullish(),
};

export const generationRequest = z.object(common);

/** JSON edits name their images (`images: [{image_url} | {file_id}]`); multipart ones upload them as files. */
const inputImage = z.union([z.object({ image_url: z.string().min(1) }), z.object({ file_id: z.string().min(1) }), z.instanceof(File)]);

export const editRequest = z.object({ ...common, images: z.array(inputImage).min(1).max(16) });

export type ImageRequest = z.output<typeof generationRequest> & { images?: unknown[] };

const NUMBERS = new Set(["n", "partial_images"]);

/**
 * A multipart edit as the JSON schema's object: the files under `image` (what the SDK sends for one) or
 * `image[]` (for several) become `images`; numbers and booleans, which a form sends as text, become themselves.
 * A value of the wrong kind is kept as it came, for the schema to name.
 */
export function formAsEdit(form: Record<string, string | File | (string | File)[]>): Record<string, unknown> {
  const out: Record<string, unknown> = { images: [] };
  for (const [key, value] of Object.entries(form)) {
    if (key === "image" || key === "image[]") (out.images as unknown[]).push(...(Array.isArray(value) ? value : [value]));
    else if (NUMBERS.has(key) && typeof value === "string" && /^\d+$/.test(value)) out[key] = Number(value);
    else if (key === "stream" && (value === "true" || value === "false")) out[key] = value === "true";
    else out[key] = value;
  }
  return out;
}
