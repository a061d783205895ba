import { setTimeout as sleep } from "node:timers/promises";
import { encodeRow } from "../analytics/row-json.js";
import { backoffMs, type Backoff } from "../db/backoff.js";
import { isTransientDbError } from "../db/faults.js";
import type { Pool } from "../db/pool.js";
import { inTransaction } from "../db/transaction.js";
import type { ErrorCode } from "../errors.js";
import { ledgerInTransaction, type DurableRow } from "../quota/in-transaction.js";
import { endVideoJob, lockVideoJob, type StoredVideo, type VideoJobRow } from "./video-jobs.js";
import { videoRequestRow } from "./video-request-row.js";

// How a video job ends (docs/billing.md, "Video quota"): ONE transaction locks the job row, resolves its durable
// hold (posted with the charge, or voided) and ends the row with its request-log row. There is no state in which
// the hold is resolved and the job still runs, so a job cannot be stranded between the two; a job already ended is
// left as it is, and since only this transaction resolves a job's hold, after finding its job running under the
// row's lock, the hold is never resolved twice.

export type VideoVerdict = { status: "completed"; charge: bigint; videos: StoredVideo[] } | { status: "failed"; code: ErrorCode };

export interface VideoEnding {
  status: "completed" | "failed";
  charged: bigint;
  videos: StoredVideo[] | null;
  code: ErrorCode | null;
}

/**
 * What the job ends as, by what its hold became: the hold decides. A posted hold is a completed job at the posted
 * charge, even when this poll saw a failure (a hold that an earlier version posted before it died: the charge
 * stands, so the job is recorded as charged, with its log row); any other hold (voided, expired, gone) is a failed job that
 * charged nothing.
 */
export function endingOf(verdict: VideoVerdict, hold: DurableRow | undefined): VideoEnding {
  if (hold?.status === "posted") {
    return { status: "completed", charged: hold.charged ?? 0n, videos: verdict.status === "completed" ? verdict.videos : null, code: null };
  }
  return { status: "failed", charged: 0n, videos: null, code: verdict.status === "failed" ? verdict.code : "upstream_error" };
}

/** How the transaction ended the job; null when it had ended before (nothing changed). */
function endRunningVideoJob(
  pool: Pool,
  job: VideoJobRow,
  verdict: VideoVerdict,
  now: Date,
  logRows: (param: string) => string,
): Promise<VideoEnding | null> {
  return inTransaction(pool, async (client) => {
    const status = await lockVideoJob(client, job.id);
    if (status !== "queued" && status !== "in_progress") return null;
    const hold = await ledgerInTransaction(client).resolveDurable(job.holdId, verdict.status === "completed" ? verdict.charge : null);
    const ending = endingOf(verdict, hold);
    const record = encodeRow(videoRequestRow(job, { ...ending, now }));
    await endVideoJob(
      client,
      job.id,
      {
        status: ending.status,
        charged: ending.charged,
        videos: ending.videos,
        errorCode: ending.code,
        now,
        record,
      },
      logRows,
    );
    return ending;
  });
}

const RETRY: Backoff = { firstMs: 100, maxMs: 2_000 };

/**
 * endRunningVideoJob, retried on a transient database error (each attempt rolled back whole, or committed: a
 * commit whose answer was lost is found ended by the next attempt) until `until` (performance.now()) or until
 * `stopping()`; then the error is thrown, and the job, still running with its hold pending, is polled again when
 * its claim lapses.
 */
export async function endVideoJobRetrying(
  pool: Pool,
  job: VideoJobRow,
  verdict: VideoVerdict,
  now: Date,
  opts: { until: number; stopping(): boolean; onFault(err: unknown): void; logRows: (param: string) => string },
): Promise<VideoEnding | null> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await endRunningVideoJob(pool, job, verdict, now, opts.logRows);
    } catch (err) {
      if (!isTransientDbError(err)) throw err;
      opts.onFault(err);
      const pause = backoffMs(attempt, RETRY);
      if (opts.stopping() || performance.now() + pause >= opts.until) throw err;
      await sleep(pause);
    }
  }
}
