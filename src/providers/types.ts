import type { ImageBilling } from "../billing/image-quota.js";
import type { ProviderConfig } from "../config/schema.js";
import type { UpstreamSignal } from "./upstream-abort.js";

// The provider layer's contract (docs/architecture.md, "Rules"): small capability interfaces; an adapter normalises wire
// traffic and usage, never sees prices, and reports failures as UpstreamError that knows if it is retryable.

export interface Target {
  providerId: string;
  provider: ProviderConfig;
  /** The model name sent upstream. */
  upstreamModel: string;
}

/** Every protocol's usage in one shape; each adapter's `convert-<vendor>-usage.ts` says how its fields map. */
export interface UsageReport {
  /** Every input token, those read from a cache included. */
  promptTokens: number;
  /** Every generated token, reasoning ("thinking") included. */
  completionTokens: number;
  /** The part of promptTokens read from a cache (priced by the model's cached_ratio). */
  cachedTokens: number;
  /** Image answers: what the image quota prices (the token counts above are then for the request log only). */
  image?: ImageBilling;
}

export interface CallOptions {
  target: Target;
  signal: UpstreamSignal;
  /** A client-supplied upstream key for this request only (bring-your-own); else the provider's key. */
  apiKey?: string;
  /**
   * Headers of the client's own protocol that this provider is given for this one request (Anthropic's
   * `anthropic-beta` on a native call), added to the provider's own; set by the route, never credentials.
   */
  clientHeaders?: Readonly<Record<string, string>>;
}

export interface JsonResult {
  kind: "json";
  status: number;
  body: Record<string, unknown>;
  /**
   * The answer's text as it arrived, of which `body` is the parse; an image answer's text without the base64 its
   * parse holds as CanonicalBase64 (src/providers/openai/images.ts, parseImagesAnswer).
   */
  raw: string;
  usage: UsageReport | null;
}

/**
 * One server-sent event's data (a JSON object, parsed and as it arrived) with its `event:` name when the
 * upstream sent one, or the `[DONE]` marker.
 */
export type StreamEvent = { data: Record<string, unknown>; raw: string; event?: string } | { done: true };

/** Receives an upstream stream's events as they arrive (EventStream.pipe). */
export interface StreamSink {
  /** The events one network read completed, in order (never empty). */
  batch(events: StreamEvent[]): void;
  /** The end: null when the stream ran its course, else the UpstreamError it failed with. Nothing follows. */
  end(error: UpstreamError | null): void;
}

/**
 * An upstream stream's events, parsed as they arrive, in batches of those one network read completed. Read
 * one batch at a time with next() (nothing more is read meanwhile), then handed over with pipe(): from then
 * on each batch goes to the sink from the network read itself. Nothing is buffered beyond one read.
 */
export interface EventStream {
  /** The next batch, or null at the end; rejects with an UpstreamError. Only before pipe(). */
  next(): Promise<StreamEvent[] | null>;
  /** Every batch not taken yet, then the end, to `sink` (a batch read before the call goes first). */
  pipe(sink: StreamSink): void;
  /** Stop and restart reading the network (the client is not keeping up). */
  pause(): void;
  resume(): void;
}

export interface StreamResult {
  kind: "stream";
  status: number;
  batches: EventStream;
}

/**
 * One upstream operation. `body` is the client's request in the protocol's own wire shape, with the model
 * already rewritten where the body names it; the adapter adds only what its wire needs. JSON or SSE follows
 * the body's `stream` flag, except where the protocol puts it in the URL (Gemini: two capabilities).
 */
export type Capability<R extends JsonResult | StreamResult = JsonResult | StreamResult> = (
  body: Record<string, unknown>,
  options: CallOptions,
) => Promise<R>;

/**
 * An image generation or edit in the gateway's neutral terms, for a protocol whose request the adapter writes
 * itself (Gemini's `generateContent`; docs/api.md, "Images").
 */
export interface NeutralImageRequest {
  prompt: string;
  /** An edit's input images, in order, as base64 typed by their bytes: never a link for the provider to fetch. */
  images: readonly { mimeType: string; data: string }[];
  /** `image_config.aspect_ratio` as the client wrote it (`16:9`). */
  aspectRatio?: string | undefined;
  /** `image_config.image_size` (`1K`, `2K`, `4K`). */
  imageSize?: string | undefined;
  /** Images asked for (`n`). */
  n: number;
}

/** What one upstream protocol can do; each capability is optional. */
export interface ProviderAdapter {
  protocol: string;
  /** OpenAI `POST {base_url}/chat/completions`. */
  chatCompletions?: Capability;
  /** OpenAI `POST {base_url}/responses`. */
  responses?: Capability;
  /** OpenAI `POST {base_url}/embeddings` (never streams). */
  embeddings?: Capability<JsonResult>;
  /** OpenAI `POST {base_url}/images/generations` (JSON; the gateway does not ask for image streams). */
  imageGenerations?: Capability<JsonResult>;
  /** OpenAI `POST {base_url}/images/edits`, JSON body; SSE with `stream: true`. */
  imageEdits?: Capability;
  /** Anthropic `POST {base_url}/v1/messages`. */
  messages?: Capability;
  /** Gemini `POST {base_url}/v1beta/models/{target model}:generateContent`; the body carries no model. */
  generateContent?: Capability<JsonResult>;
  /** Gemini `...:streamGenerateContent?alt=sse`: the same body, answered as SSE. */
  streamGenerateContent?: Capability<StreamResult>;
  /**
   * Images by Gemini's `generateContent` (src/providers/gemini/images.ts), answered as an OpenAI ImagesResponse:
   * `data` items with `b64_json`, and `usage` in ImageGenUsage's shape for the image quota.
   */
  generateImages?: (request: NeutralImageRequest, options: CallOptions) => Promise<JsonResult>;
  /**
   * The evaluator's `POST {base_url}/v1/systemone` (JSON only). The body is the request's JSON text, sent as it
   * is: the client's own bytes with the model replaced, so nested JSON reaches the evaluator exactly.
   */
  evaluate?: (body: string, options: CallOptions) => Promise<JsonResult>;
  /**
   * Starts an upstream video job: the `video` protocol's `POST {base_url}/video/generations` (docs/mock-upstream.md,
   * "Video protocol"), OpenAI's `POST {base_url}/videos`.
   */
  videoSubmit?: (body: Record<string, unknown>, options: CallOptions) => Promise<VideoJobReport>;
  /** The job's status, and its videos once completed: `GET {base_url}/video/generations/{id}`, `GET {base_url}/videos/{id}`. */
  videoStatus?: (upstreamId: string, options: CallOptions) => Promise<VideoJobReport>;
  /**
   * The video of a completed job whose report said `{content: "provider"}`, handed over as it arrives, with the
   * provider's key (OpenAI `GET {base_url}/videos/{id}/content`). A declared length over `maxBytes` is refused
   * before the body is read, and the chunks stop with UpstreamAnswerTooLargeError once they pass it.
   */
  videoContent?: (upstreamId: string, options: CallOptions, maxBytes: number) => Promise<ByteStream>;
  close(): Promise<void>;
}

export const VIDEO_JOB_STATUSES = ["queued", "in_progress", "completed", "failed"] as const;

export type VideoJobStatus = (typeof VIDEO_JOB_STATUSES)[number];

/**
 * Where a completed job's video is fetched from: a link the upstream answered with (the `video` protocol), fetched
 * through the SSRF-checked downloader (./safe-download.ts); or the provider itself, by the job's upstream id, with
 * its key (its `videoContent` capability: OpenAI). Stored as it is in the job's row (`video_jobs.videos`).
 */
export type VideoLocation = { url: string } | { content: "provider" };

/** An upstream video job as the adapter read it: never its error text, only what the gateway acts on. */
export interface VideoJobReport {
  /** The upstream's job id (kept by the gateway, never shown to a client). */
  id: string;
  status: VideoJobStatus;
  /** A completed job's videos (at least one); empty otherwise. */
  videos: (VideoLocation & { durationSeconds: number | null })[];
}

/** A body handed over as it arrives (a video's bytes); a failure is thrown from the loop as an UpstreamError. */
export interface ByteStream {
  /** The answer's Content-Type as sent, unchecked. */
  contentType: string | null;
  /** Leaving the loop early closes the connection: nothing more is read. */
  chunks: AsyncIterable<Buffer>;
}

/**
 * Reads the usage a stream reports, one event at a time: `usage = read(event.data, usage)`. Protocols that
 * spread usage over several events (Anthropic) combine them with the report so far.
 */
export type StreamUsageReader = (data: Record<string, unknown>, prior: UsageReport | null) => UsageReport | null;

/**
 * `invalid_output`: an answer whose content failed the gateway's own checks after the upstream did the work
 * (invalid image data): final, never tried on the next target, which would generate again.
 */
export type UpstreamFailure = "connect" | "timeout" | "status" | "protocol" | "too_large" | "invalid_output" | "aborted";

/**
 * The kind of a network failure, as the operator's log names it: a wrong host (dns), nothing listening
 * (connection_refused), the wrong scheme or certificate (tls), a connection cut (connection_reset), an
 * unreachable network, or one of the provider's timeouts (docs/configuration.md, `timeouts`).
 */
export type NetworkFailure =
  | "connection_refused"
  | "dns"
  | "tls"
  | "connection_reset"
  | "network_unreachable"
  | "connect_timeout"
  | "first_byte_timeout"
  | "idle_timeout"
  | "other";

/**
 * An upstream call that failed. Carries only what the gateway may act on: never the upstream body, which can
 * hold credentials or internals, and never the request.
 */
export class UpstreamError extends Error {
  constructor(
    readonly failure: UpstreamFailure,
    readonly status: number | null,
    /** Retry-After / retry-after-ms of a 429 or 529, passed through to the client. */
    readonly retryHeaders: Record<string, string> = {},
    /** What went wrong on the network (a `connect` or `timeout` failure), for the operator's log; never shown to a client. */
    readonly network: NetworkFailure | null = null,
  ) {
    super(status ? `upstream answered ${status}` : `upstream ${failure}`);
    this.name = "UpstreamError";
  }

  /**
   * Whether the next target may be tried (only before the first byte reached the client). An invalid answer
   * (protocol) counts as a bad gateway, like a 502. An answer over the cap (too_large) does not: the next
   * target would most likely answer as much, and this one has done (and may bill) the work already.
   */
  get retryable(): boolean {
    if (this.failure === "connect" || this.failure === "timeout" || this.failure === "protocol") return true;
    return this.failure === "status" && this.status !== null && FALLBACK_STATUSES.has(this.status);
  }
}

/**
 * A 2xx JSON answer longer than its capability's cap (`limits.upstream_answer_bytes`), refused by its
 * Content-Length or as soon as the bytes read pass the cap; the rest is never read. `status` is the upstream's.
 */
export class UpstreamAnswerTooLargeError extends UpstreamError {
  constructor(
    /** The cap that was passed, in bytes (the client is told it). */
    readonly limitBytes: number,
    status: number,
  ) {
    super("too_large", status);
    this.message = `upstream answer over ${limitBytes} bytes`;
  }
}

/** Fallback on these; never on 400, 401, 403, 404, 413, 422 or any other status. */
export const FALLBACK_STATUSES = new Set([429, 500, 502, 503, 504, 529]);
