import { discardObsoleteJobs, expireLeases } from "./sweep-sql.js";
import type { Queryable } from "../../db/pool.js";

export interface SweepResult {
  /** Expired leases whose job is queued again (after its backoff). */
  requeued: number;
  /** Expired leases at the last attempt: the job failed with `lease_expired`. */
  failed: number;
  /** Queued jobs of resolved cases or of past revisions. */
  discarded: number;
}

/**
 * One pass of the support sweep (the `support_sweep` task every minute, and tests): ends expired leases and
 * discards queued jobs nobody should do any more. Idempotent.
 */
export async function sweepSupportJobs(db: Queryable): Promise<SweepResult> {
  const { requeued, failed } = await expireLeases(db);
  const discarded = await discardObsoleteJobs(db);
  return { requeued, failed, discarded };
}
