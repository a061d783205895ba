// The pauses between retries of a transient fault: doubling from the first, capped, so that a long outage is met
// with fewer attempts the longer it lasts; with jitter where many callers would otherwise retry in step.

export interface Backoff {
  /** The pause before the retry of attempt 0. */
  firstMs: number;
  maxMs: number;
  /** Each pause is drawn from its upper half. */
  jitter?: boolean;
}

/** The pause before retrying after failed attempt number `attempt` (from 0). */
export function backoffMs(attempt: number, backoff: Backoff): number {
  const ms = Math.min(backoff.maxMs, backoff.firstMs * 2 ** attempt);
  return backoff.jitter ? ms * (0.5 + Math.random() / 2) : ms;
}
