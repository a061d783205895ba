import type { HttpBindings } from "@hono/node-server";
import type { GeminiImageFault } from "./gemini-image-faults.js";
import type { ImageKind, ImageUsageKind } from "./openai-images-faults.js";
import type { InvalidAnswer } from "./systemone-evaluator.js";

/**
 * What every handler of the mock upstream finds on its Hono context. Declared here, below the middleware and
 * routes that read it and the app that assembles them, so that this folder's imports run one way.
 */

/** The faults a request asked for in its headers, parsed once per request by ./faults.ts. */
export interface Faults {
  /** `x-mock-status`: answer this status (400–599) with a provider-shaped error body. */
  status?: number;
  /** `x-mock-retry-after`: `Retry-After` on that error (delay seconds or an HTTP date), passed through verbatim. */
  retryAfter?: string;
  /** `x-mock-retry-after-ms`: `retry-after-ms` on that error (the OpenAI SDK's millisecond variant). */
  retryAfterMs?: number;
  /** `x-mock-delay-ms`: wait before the first byte, at most MAX_DELAY_MS (./faults.ts). */
  delayMs?: number;
  /** `x-mock-chunk-delay-ms`: wait between stream chunks, at most MAX_DELAY_MS (./faults.ts). */
  chunkDelayMs?: number;
  /** `x-mock-drop-after`: in a stream, send this many content chunks, then destroy the connection. */
  dropAfter?: number;
  /** `x-mock-omit-usage`: leave usage out of the answer (JSON and stream). */
  omitUsage: boolean;
  /** `x-mock-no-base64`: embeddings ignore `encoding_format: "base64"`, as a provider without it would. */
  noBase64: boolean;
  /** `x-mock-zero-usage`: the evaluator reports `input_tokens: 0, output_tokens: 0`. */
  zeroUsage: boolean;
  /** `x-mock-invalid-answer`: the evaluator spoils its first answer (missing, wrong type, out of range). */
  invalidAnswer?: InvalidAnswer;
  /** `x-mock-image`: the image routes answer this instead of a good base64 image (a link, bad bytes, …). */
  image?: ImageKind;
  /** `x-mock-image-usage`: the image routes' usage with cached tokens, or without its details. */
  imageUsage?: ImageUsageKind;
  /** `x-mock-gemini-image`: a Gemini answer asking for images is blocked, filtered, imageless, or spoilt. */
  geminiImage?: GeminiImageFault;
}

export type MockUpstreamEnv = {
  // Node bindings let a route cut the TCP connection itself (the `x-mock-drop-after` fault).
  Bindings: HttpBindings;
  Variables: { faults: Faults };
};
