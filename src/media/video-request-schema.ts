import { z } from "zod";
import { identifier } from "@model-gateway/worker-kit/wire/text";
import { MAX_VIDEO_SECONDS } from "../config/catalog-schema.js";

// The unified video request (spec "Video generation request"; docs/api.md, "Video"). Every field the spec names
// is checked here and mapped per provider protocol by ./video-capabilities.ts; other fields are refused, so a
// typo is a 400 rather than a setting silently lost (provider-specific settings go in `provider_options`).

/** Videos per request: a job holds n × duration of quota at once, so n is kept small. */
export const MAX_VIDEOS = 4;
/** The spec's "Other numeric limits". */
export const MAX_VOICES = 2;

/** The type's refusal, or "is required" for a missing field. */
const expected = (what: string) => (issue: { input?: unknown }) => (issue.input === undefined ? "is required" : what);

const text = z.string({ error: expected("must be a string") }).min(1, { error: "must not be empty" });
const optionalText = z.string({ error: "must be a string" }).min(1, { error: "must not be empty" }).optional();

const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: `must be one of ${values.map((v) => `"${v}"`).join(", ")}` });

const prompt = z.union([text, z.strictObject({ text, image: text })], {
  error: (issue) => (issue.input === undefined ? "is required" : 'must be a string or an object {"text": "…", "image": "…"}'),
});

const voice = z.looseObject(
  { voice_id: z.string({ error: expected("must be a string") }) },
  { error: "must be an object with a voice_id" },
);

export const videoRequestSchema = z.strictObject(
  {
    model: identifier(),
    prompt,
    duration: z
      .number({ error: "must be a number of seconds" })
      .positive({ error: "must be positive" })
      .max(MAX_VIDEO_SECONDS, { error: `must be at most ${MAX_VIDEO_SECONDS} seconds` })
      .optional()
      .meta({
        description: "Seconds per video; the model's `video_price.max_seconds` may allow less, its `default_seconds` applies when absent.",
      }),
    resolution: optionalText.meta({ description: 'e.g. "720p"' }),
    aspect_ratio: optionalText.meta({ description: 'e.g. "16:9"' }),
    input_image: optionalText,
    image_url: optionalText,
    input_video: optionalText,
    video_url: optionalText,
    input_audio: optionalText,
    audio_url: optionalText,
    n: z
      .int({ error: "must be an integer" })
      .min(1, { error: "must be at least 1" })
      .max(MAX_VIDEOS, { error: `must be at most ${MAX_VIDEOS}` })
      .optional(),
    audio: z.boolean({ error: "must be a boolean" }).optional(),
    sound: oneOf(["on", "off"]).optional(),
    tier: oneOf(["standard", "pro", "4k"]).optional(),
    quality: optionalText,
    mode: optionalText,
    voice_list: z
      .array(voice, { error: "must be an array" })
      .max(MAX_VOICES, { error: `must hold at most ${MAX_VOICES} voices` })
      .optional(),
    provider_options: z
      .record(z.string(), z.unknown(), { error: "must be an object" })
      .optional()
      .meta({ description: "Provider-specific settings, merged into the upstream request (docs/api.md)." }),
  },
  {
    error: (issue) =>
      issue.code === "unrecognized_keys"
        ? `unknown field ${issue.keys.join(", ")}: provider-specific settings go in provider_options`
        : "the body must be a JSON object",
  },
);

export type VideoRequest = z.infer<typeof videoRequestSchema>;
