import type pg from "pg";
import type { Queryable, TimedQuery } from "../db/pool.js";
import { insertRows, rewriteRows } from "./row-json.js";

// The outbox's statements (outbox-schema.ts): what the journal writes on the main database, and what the drainer
// reads there, applies on the analytics database and deletes.

/** The records of the JSON array `param`, in their order, as outbox records of `kind`. */
const outboxOf = (kind: "insert" | "rewrite", param: string) =>
  `insert into request_log_outbox (kind, record)
select '${kind}', t.record from json_array_elements(${param}) with ordinality as t(record, n) order by t.n`;

/** The journal's insert when the log lives apart: the rows' records, committed with their charge. */
export const outboxInserts = (param: string) => outboxOf("insert", param);
/** The journal's rewrite when the log lives apart: a refunded row's new figures, after the insert they rewrite. */
export const outboxRewrites = (param: string) => outboxOf("rewrite", param);

/**
 * Taken in the drainer's transaction on the main database: one drainer at a time across processes, and released
 * by that transaction's end, whatever ends it (a crash included).
 */
const DRAIN_LOCK = "select pg_try_advisory_xact_lock(hashtext('request_log_outbox_drain')) as locked";

export interface OutboxRecord {
  /** bigint as text. */
  id: string;
  kind: "insert" | "rewrite";
  /** The encoded row (row-json.ts), as JSON text. */
  record: string;
}

export async function tryDrainLock(client: pg.PoolClient): Promise<boolean> {
  const { rows } = await client.query<{ locked: boolean }>(DRAIN_LOCK);
  return rows[0]!.locked;
}

/** The oldest `limit` records, in id order. */
export async function readOutbox(client: Queryable, limit: number): Promise<OutboxRecord[]> {
  const { rows } = await client.query<OutboxRecord>({
    name: "request_log_outbox_read",
    text: "select id::text, kind, record::text from request_log_outbox order by id limit $1",
    values: [limit],
  });
  return rows;
}

const INSERT_RECORDS = insertRows("$1::json");
const REWRITE_RECORDS = rewriteRows("$1::json");
const arrayOf = (records: OutboxRecord[]) => `[${records.map((r) => r.record).join(",")}]`;

/**
 * Applies records on the analytics database, on `client` inside its transaction: the inserts first (idempotent by
 * the log's key: a batch delivered again inserts nothing twice), then the rewrites, which set figures and so are
 * idempotent too. A rewrite's insert has a smaller id, so it is in this batch or an earlier one.
 */
export async function applyRecords(client: Queryable, records: OutboxRecord[], timeoutMs?: number): Promise<void> {
  const apply = async (kind: OutboxRecord["kind"], name: string, text: string) => {
    const ofKind = records.filter((r) => r.kind === kind);
    if (ofKind.length === 0) return;
    const query: TimedQuery = { name, text, values: [arrayOf(ofKind)], query_timeout: timeoutMs };
    await client.query(query);
  };
  await apply("insert", "request_log_outbox_insert", INSERT_RECORDS);
  await apply("rewrite", "request_log_outbox_rewrite", REWRITE_RECORDS);
}

/** Deletes drained records from the outbox (main database). */
export async function deleteDrained(client: Queryable, ids: string[]): Promise<void> {
  await client.query({
    name: "request_log_outbox_delete",
    text: "delete from request_log_outbox where id = any($1::bigint[])",
    values: [ids],
  });
}

/** Moves records the analytics database refused as data to the quarantine, in one statement (main database). */
export async function quarantine(client: Queryable, ids: string[], code: string): Promise<void> {
  await client.query({
    name: "request_log_outbox_quarantine",
    text: `with moved as (delete from request_log_outbox where id = any($1::bigint[]) returning id, kind, record, created_at)
insert into request_log_outbox_quarantine (id, kind, record, created_at, error_code)
select id, kind, record, created_at, $2 from moved`,
    values: [ids, code],
  });
}

export interface OutboxDepth {
  /** Records waiting. */
  depth: number;
  /** Milliseconds since the oldest waiting record was written (0 when none waits). */
  lagMs: number;
}

export async function readOutboxDepth(db: Queryable, timeoutMs?: number): Promise<OutboxDepth> {
  const query: TimedQuery = {
    name: "request_log_outbox_depth",
    text: `select count(*)::int as depth,
  coalesce(extract(epoch from clock_timestamp() - min(created_at)) * 1000, 0)::float8 as lag_ms from request_log_outbox`,
    query_timeout: timeoutMs,
  };
  const { rows } = await db.query<{ depth: number; lag_ms: number }>(query);
  return { depth: rows[0]!.depth, lagMs: Math.max(0, rows[0]!.lag_ms) };
}
