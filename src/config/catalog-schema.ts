import { constants as bufferConstants } from "node:buffer";
import { z } from "zod";

// The config's catalog: providers, the models they serve, and the caps on what one upstream answer may hold
// (schema.ts assembles the whole file; docs/configuration.md documents every key).

/** A name the config gives: a provider, a model, a plan. */
export const configId = z.string().min(1).max(128);

export const providerProtocols = ["openai", "anthropic", "gemini", "systemone", "video"] as const;
export const modelKinds = ["chat", "embedding", "image", "video", "systemone"] as const;

export const providerSchema = z.strictObject({
  protocol: z.enum(providerProtocols),
  base_url: z.url({ protocol: /^https?$/ }),
  api_key: z.string().default(""),
  /** openai: ask for usage in streams (stream_options.include_usage); off for servers that reject it. */
  stream_usage: z.boolean().default(true),
  /** Requests may bring their own key for this provider (X-Upstream-Api-Key); off unless the operator opts in. */
  allow_byok: z.boolean().default(false),
  /** Keep-alive connections to this provider per gateway process. */
  max_connections: z.int().positive().default(256),
  timeouts: z
    .strictObject({
      connect_ms: z.int().positive().default(5_000),
      first_byte_ms: z.int().positive().default(60_000),
      idle_ms: z.int().positive().default(60_000),
    })
    .prefault({}),
});

export const MiB = 1024 * 1024;

/**
 * The clip lengths OpenAI's video API makes (`VideoSeconds` in its API description: "4", "8", "12"): a video
 * model with an `openai` target must default to one of them (./findings.ts).
 */
export const OPENAI_VIDEO_SECONDS = [4, 8, 12] as const;

/** The longest video a request may ask for on any model (docs/api.md, "Video"). */
export const MAX_VIDEO_SECONDS = 600;

/**
 * The most bytes of one upstream JSON answer (2xx) the gateway reads, per upstream capability: the answer is
 * held whole (text, then its parse) to be checked and reshaped, so without a cap a broken or hostile upstream
 * could make a process buffer gigabytes. Past it: 502 upstream_answer_too_large, no fallback. Streams are
 * relayed as they arrive and never held whole, so they have no cap. Why each default: docs/configuration.md.
 */
const answerBytes = (fallback: number) =>
  // One answer is decoded into one string; V8 refuses longer ones (ERR_STRING_TOO_LONG).
  z.int().positive().max(bufferConstants.MAX_STRING_LENGTH).default(fallback);

export const upstreamAnswerLimitsSchema = z
  .strictObject({
    chat_completions: answerBytes(32 * MiB),
    responses: answerBytes(32 * MiB),
    messages: answerBytes(32 * MiB),
    generate_content: answerBytes(32 * MiB),
    embeddings: answerBytes(256 * MiB),
    evaluate: answerBytes(128 * MiB),
    /** For the image capabilities, read once they exist. */
    images: answerBytes(256 * MiB),
    /** For the video capabilities (job JSON; video bytes are never read as JSON), read once they exist. */
    video: answerBytes(1 * MiB),
  })
  .prefault({});

const targetSchema = z.union([configId, z.strictObject({ provider: configId, model: z.string().min(1).optional() })]);

export const modelSchema = z.strictObject({
  kind: z.enum(modelKinds),
  upstream: z.string().min(1),
  targets: z.array(targetSchema).min(1),
  token_multiplier: z.number().nonnegative().default(1),
  /** Price of a completion token relative to a prompt token. */
  completion_ratio: z.number().nonnegative().default(1),
  /** Price of a cached prompt token relative to an uncached one. */
  cached_ratio: z.number().nonnegative().default(1),
  owned_by: z.string().default("gateway"),
  description: z.string().default(""),
  release_date: z.iso.date().optional(),
  /** More public IDs of this model that only reseller keys may use; answers name the ID the client sent. */
  reseller_aliases: z.array(configId).default([]),
  /** systemone: the whole input is priced `multiplier` times when it is over `threshold_tokens`. */
  long_context: z.strictObject({ threshold_tokens: z.int().nonnegative(), multiplier: z.number().nonnegative() }).optional(),
  /** systemone: what reseller keys pay, in USD per million input tokens (pay-as-you-go). */
  reseller_price: z.strictObject({ input_usd_per_million: z.number().nonnegative() }).optional(),
  /**
   * chat: the most output tokens one answer (one choice) may have; caps a stream that asks for no limit, and one
   * asking for more (docs/billing.md, "Streams that overrun"). Absent: the request's own limit, if any.
   */
  max_output_tokens: z.int().positive().optional(),
  /** systemone: token limits of the input, instead of the version's own (1.13: 64,000 and 32,000). */
  token_limits: z.strictObject({ total: z.int().positive(), state_plus_question: z.int().positive() }).optional(),
  /** video (required there): quota per second of video produced, and the durations a request may ask for (docs/billing.md). */
  video_price: z
    .strictObject({
      units_per_second: z.number().nonnegative(),
      /** Held and charged per video when a request names no `duration`. */
      default_seconds: z.number().positive().max(MAX_VIDEO_SECONDS).default(5),
      /** The longest `duration` a request may ask for (400 above it). */
      max_seconds: z.number().positive().max(MAX_VIDEO_SECONDS).default(60),
    })
    .refine((p) => p.default_seconds <= p.max_seconds, {
      message: "default_seconds must not exceed max_seconds",
      path: ["default_seconds"],
    })
    .optional(),
});

/** The upstream's price of one evaluator version or upstream model name, USD per million tokens. */
export const rateCardSchema = z.strictObject({
  input_usd_per_million: z.number().nonnegative(),
  output_usd_per_million: z.number().nonnegative().default(0),
});

/** Keys only evaluation models take. */
export const SYSTEMONE_KEYS = ["long_context", "reseller_price", "token_limits"] as const;
