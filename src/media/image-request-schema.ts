import { z } from "zod";
import { identifier } from "@model-gateway/worker-kit/wire/text";

// The image request bodies (spec "Image generation request", "Image edit request"; docs/api.md, "Images").
// Only the fields the gateway knows are checked; any other field passes through to the provider, as for chat.
// `null` is not taken for absent: each field is its type or left out.

/** OpenAI's own cap on images per request; it also bounds what one request can hold against the quota. */
const MAX_N = 10;
/** OpenAI's cap on input images of one edit. */
export const MAX_EDIT_IMAGES = 16;

/** The type's refusal, or "is required" for a missing field. */
const expected = (what: string) => (issue: { input?: unknown }) => (issue.input === undefined ? "is required" : what);

const text = z.string({ error: expected("must be a string") }).min(1, { error: "must not be empty" });

/** An enum whose refusal lists the values, for the 400's message. */
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `must be one of ${values.map((v) => `"${v}"`).join(", ")}` });

const count = z
  .int({ error: "must be an integer" })
  .min(1, { error: "must be at least 1" })
  .max(MAX_N, { error: `must be at most ${MAX_N}` });

const compression = z
  .int({ error: "must be an integer" })
  .min(0, { error: "must be at least 0" })
  .max(100, { error: "must be at most 100" });

const imageConfig = z.strictObject(
  {
    aspect_ratio: z
      .string({ error: "must be a string" })
      .regex(/^[1-9]\d{0,3}:[1-9]\d{0,3}$/, { error: 'must be a width:height ratio such as "16:9"' })
      .optional()
      .meta({ description: 'Width:height, such as "1:1", "16:9", "9:16", "4:3", "3:4", "4:5", "5:4", "21:9".' }),
    image_size: text.optional().meta({ description: 'The output resolution, such as "1K", "2K", "4K".' }),
  },
  {
    error: (issue) =>
      issue.code === "unrecognized_keys"
        ? `unknown key ${issue.keys.join(", ")}: only aspect_ratio and image_size are taken`
        : "must be an object with aspect_ratio and image_size",
  },
);

export type ImageConfig = z.infer<typeof imageConfig>;

/** Fields both routes share, with the same checks. */
const common = {
  model: identifier(),
  prompt: text,
  n: count.optional(),
  size: text.optional(),
  quality: text.optional(),
  background: oneOf(["auto", "opaque", "transparent"]).optional(),
  output_format: oneOf(["png", "jpeg", "webp"]).optional(),
  output_compression: compression.optional(),
  moderation: oneOf(["auto", "low"]).optional(),
  user: z.string({ error: "must be a string" }).optional().meta({ description: "Accepted and never sent upstream." }),
};

const responseFormat = oneOf(["url", "b64_json"]);

export const imageGenerationSchema = z.looseObject(
  {
    ...common,
    response_format: responseFormat.default("url").meta({ description: "How the gateway delivers each image; never sent upstream." }),
    style: text.optional(),
    image_config: imageConfig.optional(),
  },
  { error: "the body must be a JSON object" },
);

export type ImageGenerationRequest = z.infer<typeof imageGenerationSchema>;

/** An input image: a URL or data: URI, as a string, `{image_url: "…"}` or `{image_url: {url: "…"}}`. */
const inputImage = z.union([z.string().min(1), z.looseObject({ image_url: z.union([text, z.looseObject({ url: text })]) })], {
  error: 'must be a non-empty string, {"image_url": "…"} or {"image_url": {"url": "…"}}',
});

export const imageEditJsonSchema = z.looseObject(
  {
    ...common,
    response_format: responseFormat.default("b64_json").meta({ description: "How the gateway delivers each image; never sent upstream." }),
    images: z
      .array(inputImage, { error: expected("must be an array of images") })
      .min(1, { error: "must hold at least one image" })
      .max(MAX_EDIT_IMAGES, { error: `must hold at most ${MAX_EDIT_IMAGES} images` }),
    mask: inputImage.optional().meta({ description: "Where to edit the first image (its transparent areas); the same forms as an image." }),
    input_fidelity: text.optional(),
    partial_images: z.int({ error: "must be an integer" }).min(0, { error: "must be at least 0" }).optional(),
    stream: z.boolean({ error: "must be a boolean" }).optional(),
  },
  { error: "the body must be a JSON object" },
);

export type ImageEditRequest = z.infer<typeof imageEditJsonSchema>;

// A multipart edit carries every field as text; these are turned into their JSON types so that
// imageEditJsonSchema checks both forms alike. Text that is not a number or a boolean stays text, and the schema
// then refuses it naming the field, rather than passing NaN on.
const INTEGER_FIELDS = new Set(["n", "output_compression", "partial_images"]);
const BOOLEAN_FIELDS = new Set(["stream"]);
/** File fields: the route reads them and puts the images in `images`. */
const FILE_FIELDS = new Set(["image", "image[]", "mask"]);

function coerce(name: string, value: string): unknown {
  if (INTEGER_FIELDS.has(name) && /^-?\d{1,15}$/.test(value)) return Number(value);
  if (BOOLEAN_FIELDS.has(name) && (value === "true" || value === "false")) return value === "true";
  return value;
}

/** A multipart edit's text fields as the JSON body's; a field sent twice stays a list, which the schema refuses. */
export function editFormToJson(fields: Record<string, string | string[]>): Record<string, unknown> {
  // Without a prototype, a field named `__proto__` is an ordinary key (which the schema then drops).
  const body: Record<string, unknown> = Object.create(null);
  for (const [name, value] of Object.entries(fields)) {
    if (FILE_FIELDS.has(name)) continue;
    body[name] = typeof value === "string" ? coerce(name, value) : value;
  }
  return body;
}

/** A file part of a multipart edit, as the API description shows it. */
const file = (description: string) => z.string().meta({ format: "binary", description });

/**
 * The multipart form of an edit, for the API description: the same fields as the JSON body (sent as text and read
 * as their JSON types), with files instead of `images` and `mask`. The route reads the form into the JSON body and
 * validates that with imageEditJsonSchema.
 */
export const imageEditFormSchema = z.object({
  ...common,
  response_format: responseFormat.optional().meta({ description: "How the gateway delivers each image (default `b64_json`)." }),
  image: z
    .union([file("An image to edit (PNG, JPEG or WebP)."), z.array(file("An image to edit.")).max(MAX_EDIT_IMAGES)])
    .meta({ description: "One image, or several (the field repeated); `image[]` is taken as well, as the OpenAI SDKs send it." }),
  mask: file("Where to edit the first image: its fully transparent areas.").optional(),
  input_fidelity: text.optional(),
  partial_images: z.int().min(0).optional(),
  stream: z.boolean().optional().meta({ description: "`true` (as text) for server-sent events." }),
});
