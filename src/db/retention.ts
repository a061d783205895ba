import type { Pool } from "./pool.js";

// What every feature's retention shares (src/quota/retention-sql.ts, src/analytics/retention-sql.ts): the
// cutoff and the batch loop. Deleting a backlog in one statement would hold its row locks and its snapshot for
// as long as it runs, and write it as one huge transaction; batches keep every statement short.

// The database's clock: the bookkeeping times the retention compares (resolved_at, created_at of the ledger)
// were written with now(), and every process reads the same cutoff from it. PostgreSQL's own text keeps the
// microseconds a JS Date would drop.
const CUTOFF = `select to_char((now() - $1::int * interval '1 day') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as cutoff`;

/** The moment `days` days before the database's now, as an ISO 8601 text with microseconds. */
export async function cutoffDaysAgo(pool: Pool, days: number): Promise<string> {
  const { rows } = await pool.query<{ cutoff: string }>({ name: "retention_cutoff", text: CUTOFF, values: [days] });
  return rows[0]!.cutoff;
}

/**
 * Runs `batch` (one statement deleting at most `batchRows` rows, returning how many it deleted) until a batch
 * deletes fewer than `batchRows`; returns the total deleted.
 */
export async function deleteInBatches(batchRows: number, batch: () => Promise<number>): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await batch();
    total += deleted;
    if (deleted < batchRows) return total;
  }
}
