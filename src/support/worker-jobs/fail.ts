import type { Pool } from "../../db/pool.js";
import { jobNotFound } from "./complete.js";
import { failJobForGood, requeueJob } from "./fail-sql.js";
import { inTransaction } from "../../db/transaction.js";
import { checkLeaseToken, leaseEnded } from "./lease.js";
import { addUsage, lockJob } from "./lease-sql.js";
import { MAX_ATTEMPTS, type FailRequest, type failResponseSchema } from "@model-gateway/worker-kit/wire/support";
import type { z } from "zod";

/**
 * A worker gives up its lease (docs/support.md, "Failing"): a retryable failure below the attempt cap queues the
 * job again after its backoff, anything else fails it with the worker's error code. Usage is recorded as for a
 * completion.
 */
export async function failJob(pool: Pool, jobId: string, body: FailRequest): Promise<z.infer<typeof failResponseSchema>> {
  return inTransaction(pool, async (db) => {
    const job = await lockJob(db, jobId);
    if (!job) throw jobNotFound();
    if (checkLeaseToken(job, body.lease_token) === "ended") throw leaseEnded();
    if (body.usage) await addUsage(db, job, body.usage);
    if (body.retryable && job.attempts < MAX_ATTEMPTS) {
      const availableAt = await requeueJob(db, job.id, body.error_code);
      return { job_id: job.id, status: "queued", available_at: availableAt.toISOString() };
    }
    await failJobForGood(db, job.id, body.error_code);
    return { job_id: job.id, status: "failed", available_at: null };
  });
}
