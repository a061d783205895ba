import { OPENAI_VIDEO_SECONDS } from "../config/catalog-schema.js";
import { errors } from "../errors.js";
import type { VideoRequest } from "./video-request-schema.js";

// The unified video fields that OpenAI's video API has under other names or shapes (its `CreateVideoJsonBody`,
// shared/reference/openai/openapi.yaml), each mapped or refused with a 400 naming the client's field
// (docs/api.md, "Video", the capability table). Each mapping reads the whole request, so fields that make one
// upstream field together (resolution and aspect_ratio make `size`) agree however many of them are sent.

type Entries = Record<string, unknown>;

/** `duration` (the seconds held, the model's default filled in) as OpenAI's `seconds`: a string of an allowed length. */
export function openaiSeconds(_request: VideoRequest, seconds: number): Entries {
  if (!(OPENAI_VIDEO_SECONDS as readonly number[]).includes(seconds)) {
    throw errors.badRequest(
      `Invalid duration: this model makes videos of ${OPENAI_VIDEO_SECONDS.join(", ")} seconds only.`,
      "duration",
      "invalid_value",
    );
  }
  return { seconds: String(seconds) };
}

/** One video per job: `n` above 1 cannot be honoured, 1 is what is made anyway. */
export function openaiOneVideo(request: VideoRequest): Entries {
  if ((request.n ?? 1) > 1) throw errors.badRequest("Invalid n: this model makes one video per job.", "n", "invalid_value");
  return {};
}

type Orientation = "landscape" | "portrait";

/** OpenAI's `VideoSize` values by height label and orientation. */
const SIZES: Record<string, Record<Orientation, string>> = {
  "720p": { landscape: "1280x720", portrait: "720x1280" },
  "1024p": { landscape: "1792x1024", portrait: "1024x1792" },
};
const ORIENTATIONS: Record<string, Orientation> = { "16:9": "landscape", "9:16": "portrait" };
const EXACT = new Map(
  Object.entries(SIZES).flatMap(([label, sizes]) =>
    Object.entries(sizes).map(([o, size]) => [size, { label, orientation: o as Orientation }]),
  ),
);

const quoted = (values: Iterable<string>) => [...values].map((v) => `"${v}"`).join(", ");

/**
 * `resolution` and `aspect_ratio` as OpenAI's `size`: a height label ("720p", "1024p") or an exact size
 * ("1280x720") with "16:9" (landscape) or "9:16" (portrait). Without an aspect ratio, portrait (OpenAI's own
 * default, 720x1280); without a resolution, 720p.
 */
export function openaiSize(request: VideoRequest): Entries {
  const { resolution, aspect_ratio: ratio } = request;
  const orientation = ratio === undefined ? undefined : ORIENTATIONS[ratio];
  if (ratio !== undefined && orientation === undefined) {
    throw errors.badRequest(
      `Invalid aspect_ratio: this model takes ${quoted(Object.keys(ORIENTATIONS))}.`,
      "aspect_ratio",
      "invalid_value",
    );
  }
  const exact = resolution === undefined ? undefined : EXACT.get(resolution);
  if (exact) {
    if (orientation !== undefined && orientation !== exact.orientation) {
      throw errors.badRequest(
        `Invalid aspect_ratio: "${ratio}" does not match the resolution "${resolution}".`,
        "aspect_ratio",
        "invalid_value",
      );
    }
    return { size: resolution };
  }
  const sizes = SIZES[resolution ?? "720p"];
  if (!sizes) {
    throw errors.badRequest(
      `Invalid resolution: this model takes ${quoted([...Object.keys(SIZES), ...EXACT.keys()])}.`,
      "resolution",
      "invalid_value",
    );
  }
  return { size: sizes[orientation ?? "portrait"] };
}

/** The fields that may carry the reference image, in the order they are looked at. */
type ImageField = "prompt.image" | "input_image" | "image_url";

const DATA_URL = /^data:image\/[\w.+-]+;base64,[A-Za-z0-9+/]+={0,2}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** The image types a bare base64 `input_image` is recognised as, by its first bytes. */
const MAGIC: [string, (b: Buffer) => boolean][] = [
  ["image/png", (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))],
  ["image/jpeg", (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff],
  ["image/webp", (b) => b.subarray(0, 4).toString("latin1") === "RIFF" && b.subarray(8, 12).toString("latin1") === "WEBP"],
];

/** An image as OpenAI's `image_url` takes it: an http(s) URL or a base64 data URL; a bare base64 image made one. */
function imageUrlOf(field: ImageField, value: string): string {
  if (/^https?:\/\/[^\s]+$/i.test(value) || DATA_URL.test(value)) return value;
  if (field === "input_image" && BASE64.test(value)) {
    const head = Buffer.from(value.slice(0, 24), "base64");
    const type = MAGIC.find(([, is]) => is(head))?.[0];
    if (type) return `data:${type};base64,${value}`;
  }
  throw errors.badRequest(
    `Invalid ${field}: an http(s) URL or a base64 data URL of an image${field === "input_image" ? ", or a base64 PNG, JPEG or WebP" : ""}.`,
    field,
    "invalid_value",
  );
}

/**
 * The reference image (`prompt.image`, `input_image` or `image_url`) as OpenAI's `input_reference: {image_url}`;
 * OpenAI takes one, so a second is refused naming it.
 */
export function openaiReference(request: VideoRequest): Entries {
  const given: [ImageField, string | undefined][] = [
    ["prompt.image", typeof request.prompt === "string" ? undefined : request.prompt.image],
    ["input_image", request.input_image],
    ["image_url", request.image_url],
  ];
  const images = given.filter((g): g is [ImageField, string] => g[1] !== undefined);
  if (images.length === 0) return {};
  if (images.length > 1) {
    const [second] = images[1]!;
    throw errors.badRequest(
      `Invalid ${second}: this model takes one reference image (${images.map(([f]) => f).join(" and ")} were sent).`,
      second,
      "invalid_value",
    );
  }
  const [field, value] = images[0]!;
  return { input_reference: { image_url: imageUrlOf(field, value) } };
}

/** OpenAI's longest `prompt`, in characters (its `maxLength`). */
const MAX_PROMPT = 32_000;

/** The prompt's text as OpenAI's `prompt`; an image beside it becomes the reference. */
export function openaiPrompt(request: VideoRequest): Entries {
  const text = typeof request.prompt === "string" ? request.prompt : request.prompt.text;
  if (text.length > MAX_PROMPT) {
    const param = typeof request.prompt === "string" ? "prompt" : "prompt.text";
    throw errors.badRequest(`Invalid ${param}: this model takes at most ${MAX_PROMPT} characters.`, param, "invalid_value");
  }
  return { prompt: text, ...openaiReference(request) };
}
