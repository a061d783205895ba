import type { Pool } from "../../src/db/pool.js";

// Whole tables as JSON, to compare a database before and after an operation exactly (every column, PostgreSQL's
// own text of every value) and to put deleted rows back.

/** The tables the retention reads or writes, parents before children (the order rows are put back in). */
export const RETENTION_TABLES = [
  "quota_accounts",
  "quota_leases",
  "quota_holds",
  "quota_hold_rollups",
  "quota_restorations",
  "reseller_credits",
  "request_logs",
  "request_log_rollups",
] as const;

export type TableName = (typeof RETENTION_TABLES)[number];
export type Snapshot = Record<TableName, Record<string, unknown>[]>;

/** Each table's rows, ordered by their whole text so the snapshot does not depend on physical order. */
export async function snapshot(pool: Pool): Promise<Snapshot> {
  const out = {} as Snapshot;
  for (const table of RETENTION_TABLES) {
    const { rows } = await pool.query<{ rows: Record<string, unknown>[] }>(
      `select coalesce(json_agg(to_jsonb(t) order by t::text), '[]') as rows from ${table} t`,
    );
    out[table] = rows[0]!.rows;
  }
  return out;
}

/** Puts the database back as `before`: rows missing are re-inserted, the rollups replaced. Only for rows the retention deletes. */
export async function restore(pool: Pool, before: Snapshot): Promise<void> {
  await pool.query("truncate quota_hold_rollups, request_log_rollups");
  for (const table of ["quota_leases", "quota_holds", "request_logs", "quota_hold_rollups", "request_log_rollups"] as const) {
    await pool.query(`insert into ${table} select * from jsonb_populate_recordset(null::${table}, $1::jsonb) on conflict do nothing`, [
      JSON.stringify(before[table]),
    ]);
  }
}
