import type { Pool } from "../db/pool.js";
import { cutoffDaysAgo, deleteInBatches } from "../db/retention.js";

// The request log's retention (docs/billing.md, "Retention"): rows older than the cutoff are deleted and added
// to request_log_rollups (schema.ts says which columns, and why) in the same statement, so what is deleted is
// exactly what is added, or neither happens.
//
// The day is created_at's UTC date, whatever the session's time zone. A model ID longer than any configured one
// (128 characters) is a name a client sent; it is kept by its first 128, which also keeps the rollup's key within
// what a btree index entry can hold (a longer one would fail every batch that met it).
// Locks: SKIP LOCKED leaves rows another run is deleting to it; the rollup rows are written in key order, so
// that two runs at once cannot deadlock. Nothing else locks request_logs rows (the writer only inserts).
const DELETE_ROWS = `
with gone as (
  delete from request_logs where request_id in (
    select request_id from request_logs where created_at < $1::timestamptz
    limit $2::int
    for update skip locked
  )
  returning created_at, user_id, public_model, route, status, usage_source, input_tokens, output_tokens, cached_tokens,
    quota_charged, cost_usd, upstream_cost_usd
), summed as (
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
  from gone
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
select count(*)::int as deleted from gone`;

async function deleteRows(pool: Pool, cutoff: string, batchRows: number): Promise<number> {
  const { rows } = await pool.query<{ deleted: number }>({
    name: "request_logs_retention",
    text: DELETE_ROWS,
    values: [cutoff, batchRows],
  });
  return rows[0]!.deleted;
}

export interface RequestLogRetention {
  /** Rows deleted (and added to request_log_rollups). */
  rows: number;
  /** What was older was deleted: ISO 8601, by the database's clock. */
  cutoff: string;
}

/**
 * Deletes the request-log rows created more than `days` days ago, in batches of `batchRows`. Running it again
 * deletes nothing new; it is safe alongside the writer and another run.
 */
export async function pruneRequestLogs(pool: Pool, days: number, batchRows: number): Promise<RequestLogRetention> {
  const cutoff = await cutoffDaysAgo(pool, days);
  const rows = await deleteInBatches(batchRows, () => deleteRows(pool, cutoff, batchRows));
  return { rows, cutoff };
}
