// One request-log row per request (issue #3 §7). Never payloads, IPs, keys or upstream error bodies.

export type UsageSource = "upstream" | "estimated" | "none";

/** Coarse, status-derived classes; never upstream text. */
export type ErrorClass =
  | "invalid_request"
  | "authentication"
  | "permission"
  | "not_found"
  | "quota_exceeded"
  | "rate_limited"
  | "context_limit"
  | "upstream_error"
  | "upstream_timeout"
  | "upstream_unreachable"
  | "client_cancelled"
  | "internal";

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
  inputTokens: number;
  outputTokens: number;
  cachedTokens: number;
  quotaCharged: bigint;
  /** The client's price in USD (exact decimal text) of a pay-as-you-go request; null when quota paid. */
  costUsd: string | null;
  /** The estimated upstream cost in USD (exact decimal text); null when unknown. */
  upstreamCostUsd: string | null;
  usageSource: UsageSource;
  latencyMs: number;
  ttfbMs: number | null;
  streamed: boolean;
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
