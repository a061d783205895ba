import { sql } from "drizzle-orm";
import { bigint, bigserial, check, json, pgTable, text, timestamp } from "drizzle-orm/pg-core";

// The request log's outbox (docs/architecture.md, "The request log apart"): with `analytics.database_url` set, the
// ledger's journal writes each resolved request's log record here, on the main database, in the statement that
// commits its charge; the drainer (outbox-drainer.ts) moves the records to the analytics database in id order
// and deletes them. Unused when the log shares the main database.
export const requestLogOutbox = pgTable(
  "request_log_outbox",
  {
    // The drain order: a refund's rewrite is written after the insert it rewrites committed, so it has a larger id.
    id: bigserial("id", { mode: "bigint" }).primaryKey(),
    // `insert`: a new log row (row-json.ts insertRows); `rewrite`: a refunded row's new figures (rewriteRows).
    kind: text("kind").notNull(),
    // The row as row-json.ts encodes it; json (not jsonb): stored as written, parsed only when drained.
    record: json("record").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [check("request_log_outbox_kind", sql`${t.kind} in ('insert', 'rewrite')`)],
);

// Records the analytics database refused as data (a value no retry can store): moved here by the drainer so that
// one bad record never blocks the outbox, kept for an operator to read (docs/operations.md).
export const requestLogOutboxQuarantine = pgTable("request_log_outbox_quarantine", {
  id: bigint("id", { mode: "bigint" }).primaryKey(),
  kind: text("kind").notNull(),
  record: json("record").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull(),
  quarantinedAt: timestamp("quarantined_at", { withTimezone: true }).notNull().defaultNow(),
  // The SQLSTATE the analytics database answered.
  errorCode: text("error_code").notNull(),
});
