// The weekly reset allowance renews at the start of the ISO week in UTC: Monday 00:00 UTC (docs/billing.md,
// "Reserve resets"), whatever the process's TZ says.

const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;
// 1970-01-01 was a Thursday: the Monday that starts its ISO week is 3 days earlier.
const EPOCH_MONDAY_MS = -3 * DAY_MS;

/** Monday 00:00 UTC of the ISO week of `now`. */
export function weekStartAt(now: Date): Date {
  const ms = now.getTime();
  return new Date(Math.floor((ms - EPOCH_MONDAY_MS) / WEEK_MS) * WEEK_MS + EPOCH_MONDAY_MS);
}

/** The next Monday 00:00 UTC strictly after `now`: when this week's resets stop applying. */
export function nextWeekAt(now: Date): Date {
  return new Date(weekStartAt(now).getTime() + WEEK_MS);
}

/** The ISO week of `now` in UTC as YYYY-Www (2026-W01 is the week holding 2026's first Thursday): a weekly period. */
export function isoWeek(now: Date): string {
  const thursday = new Date(weekStartAt(now).getTime() + 3 * DAY_MS);
  const year = thursday.getUTCFullYear();
  const week = Math.floor((thursday.getTime() - Date.UTC(year, 0, 1)) / WEEK_MS) + 1;
  return `${year}-W${String(week).padStart(2, "0")}`;
}
