import { requestIdTime } from "../ids.js";

// The time ranges the reads of the request log name, so that PostgreSQL reads only the day partitions that can
// hold their rows (docs/architecture.md, "The request log"). Pure: the statements take them as parameters.

/** created_at bounds, `from` included and `to` excluded; null is unbounded on that side. */
export interface LogRange {
  from: Date | null;
  to: Date | null;
}

/** How far the clocks of the processes that mint an id and write its row may disagree. */
export const CLOCK_SKEW_MS = 5 * 60_000;
const DAY_MS = 86_400_000;

/** The oldest row the retention keeps, `retentionDays` before `now`; null when it keeps all (0). */
export const retainedSince = (now: Date, retentionDays: number): Date | null =>
  retentionDays > 0 ? new Date(now.getTime() - retentionDays * DAY_MS - CLOCK_SKEW_MS) : null;

/**
 * Where the row of request `requestId` can be: a row is written when its request resolves, at most `resolveMs`
 * after its id was minted (the longest a video job may hold its units); an id without a time (minted before ids
 * carried one) can be anywhere the retention keeps.
 */
export function requestRowRange(requestId: string, now: Date, retentionDays: number, resolveMs: number): LogRange {
  const minted = requestIdTime(requestId);
  if (minted === null) return { from: retainedSince(now, retentionDays), to: null };
  return { from: new Date(minted.getTime() - CLOCK_SKEW_MS), to: new Date(minted.getTime() + resolveMs + CLOCK_SKEW_MS) };
}
