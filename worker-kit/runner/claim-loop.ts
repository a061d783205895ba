import { isRetryable } from "../client/errors.js";
import type { ClaimedJob } from "../wire/support.js";
import { backoffDelay, pollDelay } from "./backoff.js";
import type { InFlightJobs } from "./in-flight.js";
import { ClaimOutage } from "./outage.js";
import { claimLimit, type ResolvedOptions } from "./options.js";

/**
 * Claims jobs while slots are free until `stopping` aborts; idle waits and backoffs end early then. Throws a
 * claim's refusal for good (not retryable); a run of retryable failures is logged as one outage (./outage.ts).
 */
export async function claimLoop(o: ResolvedOptions, jobs: InFlightJobs, stopping: AbortSignal): Promise<void> {
  const outage = new ClaimOutage(o.logger, o.now);
  while (!stopping.aborted) {
    const free = o.concurrency - jobs.size;
    if (free <= 0) {
      await jobs.changed();
      continue;
    }
    const claimSentAt = o.now();
    let claimed: ClaimedJob[];
    try {
      claimed = await o.client.claim({ limit: claimLimit(free), lease_seconds: o.leaseSeconds, worker_id: o.workerId });
      outage.answered();
    } catch (err) {
      if (!isRetryable(err)) throw err;
      const delay = backoffDelay(outage.failures + 1, err.retryAfterMs, o.random);
      outage.failed(err, delay);
      await o.sleep(delay, stopping);
      continue;
    }
    for (const job of claimed) jobs.begin(job, claimSentAt);
    if (claimed.length === 0) await o.sleep(pollDelay(o.pollIntervalMs, o.random), stopping);
  }
}
