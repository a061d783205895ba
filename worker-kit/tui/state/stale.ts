// The mark a screen shows when its last refresh failed: it keeps the data it had, says since when that data is
// stale (the first failure since the last success, as a UTC clock) and why, naming the gateway it could not read.

export interface RefreshFailure {
  /** Milliseconds since the epoch of the first failed refresh since the last good one. */
  since: number;
  /** describeError's line for the latest failure. */
  error: string;
}

export const utcClock = (ms: number): string => new Date(ms).toISOString().slice(11, 19);

export function staleLine(failure: RefreshFailure, baseUrl: string): string {
  const why = failure.error.includes(baseUrl) ? failure.error : `${baseUrl}: ${failure.error}`;
  return `stale since ${utcClock(failure.since)} UTC · ${why}`;
}
