import type { Pool } from "../db/pool.js";
import { faultCode } from "../db/faults.js";
import { inTransaction } from "../db/transaction.js";
import { cutoffDaysAgo, deleteInBatches } from "../db/retention.js";
import { addDays, dayStart, partitionDay, partitionName, type Day } from "./partition-days.js";
import { oldTableExists } from "./partitions.js";

// The request log's retention (docs/billing.md, "Retention"): a day whose partition lies wholly before the cutoff
// is added to request_log_rollups (schema.ts says which columns, and why) and its partition dropped; no DELETE
// runs on a day partition. Two steps, each exact:
// 1. DETACH PARTITION, alone in its transaction: from then on no row can reach the day's table (a late row of that
//    day would land in the DEFAULT partition). Not CONCURRENTLY: PostgreSQL refuses that while a DEFAULT
//    partition exists, so it takes the log's exclusive lock for a moment; a lock_timeout keeps a long reader from
//    queueing every request behind it, and the next run tries again.
// 2. One transaction adds the detached table's rollups, records the day in request_log_days and drops the table:
//    all or nothing. A run cut between the two finds the table detached and does step 2; a day already recorded is
//    only dropped, never added twice.
// Rows older than the cutoff in the DEFAULT partition (only a row of a day that had no partition) are deleted
// with their rollups in one statement per batch, as before partitioning.
//
// The day is created_at's UTC date, whatever the session's time zone. A model ID longer than any configured one
// (128 characters) is a name a client sent; it is kept by its first 128, which also keeps the rollup's key within
// what a btree index entry can hold. The rollup rows are written in key order, so that two runs cannot deadlock.

const ROLLUP_COLUMNS = `created_at, user_id, public_model, route, status, usage_source, input_tokens, output_tokens, cached_tokens,
    quota_charged, cost_usd, upstream_cost_usd`;

/** The statement that adds the rows of the CTE or table `source` to request_log_rollups; yields `summed_rows`. */
const addRollups = (source: string) => `summed as (
  select (created_at at time zone 'UTC')::date as day, user_id, left(public_model, 128) as public_model, route,
    count(*) as requests,
    count(*) filter (where status >= 400) as errors,
    count(*) filter (where usage_source = 'estimated') as estimated,
    sum(input_tokens)::bigint as input_tokens,
    sum(output_tokens)::bigint as output_tokens,
    sum(cached_tokens)::bigint as cached_tokens,
    sum(quota_charged)::bigint as quota_charged,
    coalesce(sum(cost_usd), 0) as cost_usd,
    coalesce(sum(upstream_cost_usd), 0) as upstream_cost_usd,
    count(*) filter (where upstream_cost_usd is null) as upstream_unpriced
  from ${source}
  group by 1, 2, 3, 4
), rolled as (
  insert into request_log_rollups (day, user_id, public_model, route, requests, errors, estimated, input_tokens,
    output_tokens, cached_tokens, quota_charged, cost_usd, upstream_cost_usd, upstream_unpriced)
  select * from summed order by day, user_id, public_model, route
  on conflict (day, user_id, public_model, route) do update set
    requests = request_log_rollups.requests + excluded.requests,
    errors = request_log_rollups.errors + excluded.errors,
    estimated = request_log_rollups.estimated + excluded.estimated,
    input_tokens = request_log_rollups.input_tokens + excluded.input_tokens,
    output_tokens = request_log_rollups.output_tokens + excluded.output_tokens,
    cached_tokens = request_log_rollups.cached_tokens + excluded.cached_tokens,
    quota_charged = request_log_rollups.quota_charged + excluded.quota_charged,
    cost_usd = request_log_rollups.cost_usd + excluded.cost_usd,
    upstream_cost_usd = request_log_rollups.upstream_cost_usd + excluded.upstream_cost_usd,
    upstream_unpriced = request_log_rollups.upstream_unpriced + excluded.upstream_unpriced
)
select coalesce(sum(requests), 0)::int as rows from summed`;

// SKIP LOCKED leaves rows another run is deleting to it.
const DELETE_DEFAULT_ROWS = `
with gone as (
  delete from request_logs_default where request_id in (
    select request_id from request_logs_default where created_at < $1::timestamptz
    limit $2::int
    for update skip locked
  )
  returning ${ROLLUP_COLUMNS}
), ${addRollups("gone")}`;

async function deleteDefaultRows(pool: Pool, cutoff: string, batchRows: number): Promise<number> {
  const { rows } = await pool.query<{ rows: number }>({
    name: "request_logs_retention_default",
    text: DELETE_DEFAULT_ROWS,
    values: [cutoff, batchRows],
  });
  return rows[0]!.rows;
}

/** The day tables of the log, attached or left detached by a run cut short. */
const DAY_TABLES = `select c.relname as name, c.relispartition as attached from pg_class c
where c.relkind = 'r' and c.relnamespace = current_schema()::regnamespace and c.relname ~ '^request_logs_p[0-9]{8}$'`;

async function dayTables(pool: Pool): Promise<{ day: Day; attached: boolean }[]> {
  const { rows } = await pool.query<{ name: string; attached: boolean }>(DAY_TABLES);
  const days: { day: Day; attached: boolean }[] = [];
  for (const row of rows) {
    const day = partitionDay(row.name);
    if (day !== null) days.push({ day, attached: row.attached });
  }
  return days.sort((a, b) => (a.day < b.day ? -1 : 1));
}

const DETACH_LOCK_TIMEOUT = "'3s'";
const isLockTimeout = (err: unknown) => faultCode(err) === "55P03";

/** Step 1; false when the lock was not had in time. */
async function detachDay(pool: Pool, day: Day): Promise<boolean> {
  try {
    await inTransaction(pool, async (client) => {
      await client.query(`set local lock_timeout = ${DETACH_LOCK_TIMEOUT}`);
      await client.query(`alter table request_logs detach partition "${partitionName(day)}"`);
    });
    return true;
  } catch (err) {
    if (isLockTimeout(err)) return false;
    throw err;
  }
}

/** Step 2: the rows rolled up (0 for a day recorded before), or null when the table's lock was not had in time. */
async function rollUpAndDrop(pool: Pool, day: Day): Promise<number | null> {
  try {
    return await inTransaction(pool, async (client) => {
      await client.query(`set local lock_timeout = ${DETACH_LOCK_TIMEOUT}`);
      const table = `"${partitionName(day)}"`;
      // The drop's lock first: nothing else can read the table halfway through.
      await client.query(`lock table ${table} in access exclusive mode`);
      const recorded = await client.query({
        name: "request_log_days_record",
        text: "insert into request_log_days (day) values ($1::date) on conflict (day) do nothing returning day",
        values: [day],
      });
      let rows = 0;
      if (recorded.rows.length > 0) {
        const summed = await client.query<{ rows: number }>(`with ${addRollups(table)}`);
        rows = summed.rows[0]!.rows;
      }
      await client.query(`drop table ${table}`);
      return rows;
    });
  } catch (err) {
    if (isLockTimeout(err)) return null;
    throw err;
  }
}

export interface RequestLogRetention {
  /** Rows rolled up into request_log_rollups and gone from the log. */
  rows: number;
  /** Day partitions dropped. */
  partitions: number;
  /** Day partitions past the cutoff left for the next run: their lock was not had in time, or the move after
   * migration 0025 is still under way (rows of old days may still be moved into them). */
  deferred: number;
  /** What was older was removed: ISO 8601, by the database's clock. */
  cutoff: string;
}

/**
 * Rolls up and removes the request log created more than `days` days ago: whole day partitions, and the DEFAULT
 * partition's old rows in batches of `batchRows`. Running it again removes nothing new; it is safe alongside the
 * writer and another run.
 */
export async function pruneRequestLogs(pool: Pool, days: number, batchRows: number): Promise<RequestLogRetention> {
  const cutoff = await cutoffDaysAgo(pool, days);
  const cutoffAt = new Date(cutoff);
  const moving = await oldTableExists(pool);
  let rows = 0;
  let partitions = 0;
  let deferred = 0;
  for (const { day, attached } of await dayTables(pool)) {
    if (dayStart(addDays(day, 1)) > cutoffAt) continue;
    if (moving || (attached && !(await detachDay(pool, day)))) {
      deferred += 1;
      continue;
    }
    const rolled = await rollUpAndDrop(pool, day);
    if (rolled === null) {
      deferred += 1;
      continue;
    }
    rows += rolled;
    partitions += 1;
  }
  rows += await deleteInBatches(batchRows, () => deleteDefaultRows(pool, cutoff, batchRows));
  return { rows, partitions, deferred, cutoff };
}
