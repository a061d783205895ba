import { sql } from "drizzle-orm";
import {
  bigint,
  boolean,
  check,
  date,
  index,
  integer,
  numeric,
  pgTable,
  primaryKey,
  smallint,
  text,
  timestamp,
  uuid,
} from "drizzle-orm/pg-core";

// One row per request (src/analytics/types.ts). No payloads, IPs, keys or upstream error bodies: only ids,
// routing metadata, counts and timings.
//
// Partitioned by UTC day of created_at, which drizzle cannot express: migration 0025 creates the table
// `partition by range (created_at)` with a DEFAULT partition, the day partitions `request_logs_pYYYYMMDD` are
// created ahead by partitions.ts, and retention rolls a whole day up into request_log_rollups and drops its
// partition (retention-sql.ts). The indexes below are declared on the parent, so every partition has them.
export const requestLogs = pgTable(
  "request_logs",
  {
    // The X-Request-Id the user cites. With created_at, the conflict target that makes a retried batch
    // idempotent (a retried row carries the same created_at): a partitioned table's unique key must include
    // its partition key.
    requestId: text("request_id").notNull(),
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
    // Set when an image request of a designated model was billed by the per-image fallback: the reason
    // (docs/billing.md, "Image quota"); null otherwise.
    gptImageUsageFallback: text("gpt_image_usage_fallback"),
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
    primaryKey({ name: "request_logs_pkey", columns: [t.requestId, t.createdAt] }),
    index("request_logs_user_created_idx").on(t.userId, t.createdAt.desc().nullsFirst(), t.requestId.desc().nullsFirst()),
    // The retention deletes by age (retention-sql.ts); without it each of its batches would scan the table.
    // created_at grows with time, so a batch's entries land on the index's rightmost pages.
    index("request_logs_created_at_idx").on(t.createdAt),
    // The support_incidents task's scan of server-side failures by public model and error code over a recent
    // window (src/support/incidents/incidents-sql.ts): a small index, as such rows are few.
    index("request_logs_server_errors_idx")
      .on(t.createdAt, t.publicModel, t.errorCode)
      .where(sql`${t.status} >= 500`),
    // The user listing returns quota_charged as a JSON number; this keeps that number exact.
    check("request_logs_quota_charged_range", sql`${t.quotaCharged} between 0 and 9007199254740991`),
  ],
);

// What the retention deleted of the request log (docs/billing.md, "Retention"), added in the statement that
// deletes the rows (retention-sql.ts): per UTC day of created_at, user, public model (its first 128
// characters: a configured model ID is never longer, so only unknown names a client sent are shortened) and
// route. What an operator's monthly report and a billing dispute ask once the rows are gone: how many requests
// and failures, the tokens and the charge, the USD paid, and the upstream cost where it was known.
export const requestLogRollups = pgTable(
  "request_log_rollups",
  {
    day: date("day", { mode: "string" }).notNull(),
    userId: uuid("user_id").notNull(),
    publicModel: text("public_model").notNull(),
    route: text("route").notNull(),
    requests: bigint("requests", { mode: "bigint" }).notNull(),
    // Rows with status >= 400 (refused, failed, cancelled by the client).
    errors: bigint("errors", { mode: "bigint" }).notNull(),
    // Rows billed from the gateway's local count (usage_source = estimated): what a dispute usually questions.
    estimated: bigint("estimated", { mode: "bigint" }).notNull(),
    inputTokens: bigint("input_tokens", { mode: "bigint" }).notNull(),
    outputTokens: bigint("output_tokens", { mode: "bigint" }).notNull(),
    cachedTokens: bigint("cached_tokens", { mode: "bigint" }).notNull(),
    quotaCharged: bigint("quota_charged", { mode: "bigint" }).notNull(),
    // Σ cost_usd (pay-as-you-go requests; a quota-paid request adds nothing), exact.
    costUsd: numeric("cost_usd").notNull(),
    // Σ upstream_cost_usd where it was known, exact; `upstream_unpriced` counts the rows where it was not.
    upstreamCostUsd: numeric("upstream_cost_usd").notNull(),
    upstreamUnpriced: bigint("upstream_unpriced", { mode: "bigint" }).notNull(),
  },
  (t) => [primaryKey({ name: "request_log_rollups_pkey", columns: [t.day, t.userId, t.publicModel, t.route] })],
);

// The UTC days of the request log that retention has rolled up (retention-sql.ts): written in the transaction
// that adds the day's rollups, so a run that finds the day here only detaches and drops its partition and never
// adds its rows twice.
export const requestLogDays = pgTable("request_log_days", {
  day: date("day", { mode: "string" }).primaryKey(),
  rolledUpAt: timestamp("rolled_up_at", { withTimezone: true }).notNull().defaultNow(),
});
