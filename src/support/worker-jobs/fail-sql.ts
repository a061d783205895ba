import type { Queryable } from "../../db/pool.js";

// A worker's failure (docs/support.md, "Failing"): the job goes back to the queue after its backoff, or fails for
// good. The lease's hash stays, so the token is told its lease ended rather than lost.

/**
 * When a job a worker gave back may be claimed again: 10 s × 2^(attempts - 1), jittered by ±25% so that jobs failed
 * together do not come back together. (An expired lease needs no backoff: the lease itself was the wait.)
 */
const RETRY_AVAILABLE_AT = "now() + make_interval(secs => 10 * power(2, attempts - 1) * (0.75 + random() * 0.5))";

const REQUEUE = `
update support_jobs set status = 'queued', available_at = ${RETRY_AVAILABLE_AT}, lease_expires_at = null,
  worker_id = null, error_code = $2, updated_at = now()
where id = $1 returning available_at`;

const FAIL = `
update support_jobs set status = 'failed', lease_expires_at = null, error_code = $2, finished_at = now(), updated_at = now()
where id = $1`;

/** Queues the job again; returns when it is claimable. */
export async function requeueJob(db: Queryable, jobId: string, errorCode: string): Promise<Date> {
  const { rows } = await db.query<{ available_at: Date }>({ name: "support_requeue_job", text: REQUEUE, values: [jobId, errorCode] });
  return rows[0]!.available_at;
}

export async function failJobForGood(db: Queryable, jobId: string, errorCode: string): Promise<void> {
  await db.query({ name: "support_fail_job", text: FAIL, values: [jobId, errorCode] });
}
