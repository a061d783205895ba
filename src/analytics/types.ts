// One request-log row per request (issue #3 §7). Never payloads, IPs, keys or upstream error bodies.

import type { ImageUsageFallbackReason } from "../billing/image-quota.js";
import type { ErrorClass, ErrorCode } from "../errors.js";

export type { ErrorClass } from "../errors.js";

/**
 * Where the billed usage came from: the upstream's report, the gateway's local count, none (nothing billed), or
 * `hold`: the usage could not be priced (a pricing failure), so the hold was charged as the safe amount.
 */
export const USAGE_SOURCES = ["upstream", "estimated", "none", "hold"] as const;

export type UsageSource = (typeof USAGE_SOURCES)[number];

export interface RequestLogRow {
  requestId: string;
  userId: string;
  keyId: string | null;
  route: string;
  /** The wire shape the client spoke: "openai", "anthropic", "gemini", "systemone"; "" when unknown. */
  clientProtocol: string;
  publicModel: string;
  upstreamModel: string | null;
  provider: string | null;
  /** Providers tried before the one that answered (or all of them on failure), in order. */
  fallbackPath: string[];
  status: number;
  errorClass: ErrorClass | null;
  /** The gateway's own error code (src/errors.ts), never upstream text; null for a success. */
  errorCode: ErrorCode | null;
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  quotaCharged: bigint;
  /** The client's price in USD (exact decimal text) of a pay-as-you-go request; null when quota paid. */
  costUsd: string | null;
  /** The estimated upstream cost in USD (exact decimal text); null when unknown. */
  upstreamCostUsd: string | null;
  usageSource: UsageSource;
  /** For image requests of a designated model billed by the per-image fallback: why (docs/billing.md); else null. */
  gptImageUsageFallback: ImageUsageFallbackReason | null;
  latencyMs: number;
  ttfbMs: number | null;
  streamed: boolean;
  /** When the request arrived. */
  receivedAt: Date;
  /** When it was resolved (settled, released or refused). */
  createdAt: Date;
}

export interface RequestLogStats {
  written: number;
  dropped: number;
  failedFlushes: number;
  buffered: number;
}

/** Buffered, batched writer: write() never blocks and never throws. */
export interface RequestLogWriter {
  write(row: RequestLogRow): void;
  /** Writes what is buffered now (retrying a failed batch once more). */
  flush(): Promise<void>;
  /** Stops the timer and flushes; later writes are dropped and counted. */
  close(): Promise<void>;
  stats(): RequestLogStats;
}
