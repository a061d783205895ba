const DAY_MS = 86_400_000;
/** Past midnight by this much, so the database's clock (the same host's) has turned the day too. */
const MARGIN_MS = 1_000;
/** Tests allowed longer than this are not held back: none is, and a wait longer than it would hold the run up. */
export const LONGEST_GUARDED_MS = 600_000;

/**
 * How long a test that may run for `timeoutMs`, starting at `nowMs` (epoch ms), waits so that it runs inside one UTC
 * day: the daily allowance is an account per UTC day, so a test that spends a day's units and then reads "the day's
 * account" would read two if it crossed midnight (the ledger is right, the test's premise is not). 0 when the day
 * has room for the whole timeout; otherwise until just past midnight.
 */
export function waitForOneUtcDay(nowMs: number, timeoutMs: number): number {
  const untilMidnight = DAY_MS - (((nowMs % DAY_MS) + DAY_MS) % DAY_MS);
  if (timeoutMs > LONGEST_GUARDED_MS || untilMidnight > timeoutMs) return 0;
  return untilMidnight + MARGIN_MS;
}
