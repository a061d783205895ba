import type { ProviderConfig } from "../config/schema.js";

// The provider layer's contract (DESIGN.md §3, §6): small capability interfaces; an adapter normalises wire
// traffic and usage, never sees prices, and reports failures as UpstreamError that knows if it is retryable.

export interface Target {
  providerId: string;
  provider: ProviderConfig;
  /** The model name sent upstream. */
  upstreamModel: string;
}

export interface UsageReport {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
}

export interface CallOptions {
  target: Target;
  signal: AbortSignal;
  /** A client-supplied upstream key for this request only (bring-your-own); else the provider's key. */
  apiKey?: string;
}

export interface JsonResult {
  kind: "json";
  status: number;
  body: Record<string, unknown>;
  /** The answer's text as it arrived, of which `body` is the parse. */
  raw: string;
  usage: UsageReport | null;
}

/** One server-sent event's data (a JSON object, parsed and as it arrived), or the terminal marker. */
export type StreamEvent = { data: Record<string, unknown>; raw: string } | { done: true };

export interface StreamResult {
  kind: "stream";
  status: number;
  /**
   * Events as they arrive, in batches of those one network read completed (never empty); iterating pulls
   * from the network (no buffering of the whole stream).
   */
  batches: AsyncIterable<StreamEvent[]>;
}

export interface ChatCompletionsCapability {
  /** `body` is the client's request with `model` already rewritten; the adapter may add what its wire needs. */
  chatCompletions(body: Record<string, unknown>, options: CallOptions): Promise<JsonResult | StreamResult>;
}

/** What one upstream protocol can do; each capability is optional. */
export interface ProviderAdapter {
  protocol: string;
  chatCompletions?: ChatCompletionsCapability["chatCompletions"];
  close(): Promise<void>;
}

export type UpstreamFailure = "connect" | "timeout" | "status" | "protocol" | "aborted";

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
  ) {
    super(status ? `upstream answered ${status}` : `upstream ${failure}`);
    this.name = "UpstreamError";
  }

  /**
   * Whether the next target may be tried (only before the first byte reached the client). An invalid answer
   * (protocol) counts as a bad gateway, like a 502.
   */
  get retryable(): boolean {
    if (this.failure === "connect" || this.failure === "timeout" || this.failure === "protocol") return true;
    return this.failure === "status" && this.status !== null && FALLBACK_STATUSES.has(this.status);
  }
}

/** Fallback on these; never on 400, 401, 403, 404, 413, 422 or any other status. */
export const FALLBACK_STATUSES = new Set([429, 500, 502, 503, 504, 529]);
