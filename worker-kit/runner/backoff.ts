// How long to wait before trying the gateway again: capped exponential backoff with full jitter (a uniformly random
// wait between 0 and the cap of the step), so that workers refused together do not come back together. When the
// gateway said how long to wait (Retry-After), the wait is never shorter than that.

export interface BackoffPolicy {
  /** The first step's cap. */
  baseMs: number;
  /** No step's cap grows past this (Retry-After may still ask for longer). */
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 500, maxMs: 30_000 };

/**
 * The wait before retry number `failures` (1 after the first failure). `random` returns a number in [0, 1);
 * `retryAfterMs` is the gateway's Retry-After, or null.
 */
export function backoffDelay(
  failures: number,
  retryAfterMs: number | null,
  random: () => number,
  policy: BackoffPolicy = DEFAULT_BACKOFF,
): number {
  const exponent = Math.max(0, failures - 1);
  const cap = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(exponent, 30));
  const jittered = Math.floor(random() * cap);
  return retryAfterMs === null ? jittered : Math.max(retryAfterMs, jittered);
}

/** An idle wait between empty claims: the interval, give or take a quarter, so idle workers spread out. */
export function pollDelay(intervalMs: number, random: () => number): number {
  return Math.round(intervalMs * (0.75 + random() * 0.5));
}
