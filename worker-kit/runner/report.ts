import { GatewayHttpError, isRetryable } from "../client/errors.js";
import { backoffDelay } from "./backoff.js";

// Telling the gateway how a job ended, honestly within its lease: a call that fails for the moment (429, 5xx, no
// connection) is tried again after a backoff, but never begun after the lease has ended, when its answer could only
// be a refusal.

export interface Clock {
  now: () => number;
  /** Resolves after `ms`, or as soon as `signal` aborts (it never rejects). */
  sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  random: () => number;
}

/** The gateway no longer counts this lease as ours (it ended, another worker holds the job, or the job is gone). */
export function isLeaseLost(err: unknown): boolean {
  if (!(err instanceof GatewayHttpError)) return false;
  return (
    (err.status === 409 && (err.code === "lease_lost" || err.code === "lease_expired")) ||
    (err.status === 404 && err.code === "job_not_found")
  );
}

/**
 * `call` until it answers; rethrows an error that a retry cannot mend, or the last one when the next try would begin
 * at or after `until`. The call gets a signal that aborts at `until`.
 */
export async function retryUntil<T>(
  call: (signal: AbortSignal) => Promise<T>,
  until: number,
  clock: Clock,
  onRetry: (err: unknown, delayMs: number) => void,
): Promise<T> {
  for (let failures = 1; ; failures++) {
    try {
      return await call(AbortSignal.timeout(Math.max(1, until - clock.now())));
    } catch (err) {
      if (!isRetryable(err)) throw err;
      const delay = backoffDelay(failures, err.retryAfterMs, clock.random);
      if (clock.now() + delay >= until) throw err;
      onRetry(err, delay);
      await clock.sleep(delay);
    }
  }
}
