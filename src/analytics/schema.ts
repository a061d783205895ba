import { sql } from "drizzle-orm";
import { bigint, boolean, check, index, integer, numeric, pgTable, smallint, text, timestamp, uuid } from "drizzle-orm/pg-core";

// One row per request (src/analytics/types.ts). No payloads, IPs, keys or upstream error bodies: only ids,
// routing metadata, counts and timings.
export const requestLogs = pgTable(
  "request_logs",
  {
    // The X-Request-Id the user cites; the conflict target that makes a retried batch idempotent.
    requestId: text("request_id").primaryKey(),
    // No foreign keys: the log is written in batches off the hot path, and a user or key deleted meanwhile
    // must not make a whole batch fail.
    userId: uuid("user_id").notNull(),
    keyId: uuid("key_id"),
    route: text("route").notNull(),
    clientProtocol: text("client_protocol").notNull(),
    publicModel: text("public_model").notNull(),
    upstreamModel: text("upstream_model"),
    provider: text("provider"),
    fallbackPath: text("fallback_path").array().notNull(),
    status: smallint("status").notNull(),
    errorClass: text("error_class"),
    // The gateway's own error code (src/errors.ts), never upstream text; null for a success and for rows
    // written before the column existed.
    errorCode: text("error_code"),
    inputTokens: integer("input_tokens").notNull(),
    outputTokens: integer("output_tokens").notNull(),
    cachedTokens: integer("cached_tokens").notNull(),
    quotaCharged: bigint("quota_charged", { mode: "bigint" }).notNull(),
    // The client's price in USD of a pay-as-you-go (reseller) request, exact; null when quota paid.
    costUsd: numeric("cost_usd"),
    // The estimated upstream cost in USD from a rate card, exact; null when no rate card prices the upstream
    // model (unknown, never a made-up zero).
    upstreamCostUsd: numeric("upstream_cost_usd"),
    usageSource: text("usage_source").notNull(),
    // Milliseconds with microsecond resolution, exact (numeric, not a float): a plain integer would lose the
    // sub-millisecond timings of fast local routes, and integer microseconds overflow int4 after 36 minutes.
    latencyMs: numeric("latency_ms", { precision: 12, scale: 3 }).notNull(),
    ttfbMs: numeric("ttfb_ms", { precision: 12, scale: 3 }),
    streamed: boolean("streamed").notNull(),
    // When the request arrived (null for rows written before the column existed); created_at is when it resolved.
    receivedAt: timestamp("received_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
  },
  (t) => [
    index("request_logs_user_created_idx").on(t.userId, t.createdAt.desc().nullsFirst(), t.requestId.desc().nullsFirst()),
    // The user listing returns quota_charged as a JSON number; this keeps that number exact.
    check("request_logs_quota_charged_range", sql`${t.quotaCharged} between 0 and 9007199254740991`),
  ],
);
