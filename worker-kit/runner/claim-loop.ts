import { describeError, isRetryable } from "../client/errors.js";
import type { ClaimedJob } from "../../src/support/wire.js";
import { backoffDelay, pollDelay } from "./backoff.js";
import type { InFlightJobs } from "./in-flight.js";
import { claimLimit, type ResolvedOptions } from "./options.js";

/**
 * Claims jobs while slots are free until `stopping` aborts; idle waits and backoffs end early then. Throws a
 * claim's refusal for good (not retryable).
 */
export async function claimLoop(o: ResolvedOptions, jobs: InFlightJobs, stopping: AbortSignal): Promise<void> {
  for (let failures = 0; !stopping.aborted;) {
    const free = o.concurrency - jobs.size;
    if (free <= 0) {
      await jobs.changed();
      continue;
    }
    const claimSentAt = o.now();
    let claimed: ClaimedJob[];
    try {
      claimed = await o.client.claim({ limit: claimLimit(free), lease_seconds: o.leaseSeconds, worker_id: o.workerId });
      failures = 0;
    } catch (err) {
      if (!isRetryable(err)) throw err;
      failures++;
      const delay = backoffDelay(failures, err.retryAfterMs, o.random);
      o.logger.warn({ err: describeError(err), failures, delay_ms: delay }, "claim failed; backing off");
      await o.sleep(delay, stopping);
      continue;
    }
    for (const job of claimed) jobs.begin(job, claimSentAt);
    if (claimed.length === 0) await o.sleep(pollDelay(o.pollIntervalMs, o.random), stopping);
  }
}
