// The request log's day partitions by name and bounds (docs/architecture.md, "The request log"): one per UTC day
// of created_at, `request_logs_pYYYYMMDD`, holding [D 00:00+00, D+1 00:00+00). Pure: the statements that create,
// fill and drop them are in partitions.ts and retention-sql.ts.

const DAY_MS = 86_400_000;
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;
const PARTITION = /^request_logs_p(\d{4})(\d{2})(\d{2})$/;

/** A UTC day as `YYYY-MM-DD`. */
export type Day = string;

/** The UTC day a moment falls on. */
export const dayOf = (at: Date): Day => at.toISOString().slice(0, 10);

/** The day `n` days after `day` (before, for a negative n). */
export function addDays(day: Day, n: number): Day {
  return dayOf(new Date(dayStart(day).getTime() + n * DAY_MS));
}

/** The first moment of the day, UTC. */
export function dayStart(day: Day): Date {
  const at = new Date(`${day}T00:00:00.000Z`);
  if (!DAY.test(day) || Number.isNaN(at.getTime()) || dayOf(at) !== day) throw new Error(`not a UTC day: ${day}`);
  return at;
}

/** The days from `from` to `to`, both included; empty when `to` is before `from`. */
export function daysBetween(from: Day, to: Day): Day[] {
  const days: Day[] = [];
  for (let day = from; day <= to; day = addDays(day, 1)) days.push(day);
  return days;
}

/** The name of the day's partition. */
export const partitionName = (day: Day): string => `request_logs_p${day.replaceAll("-", "")}`;

/** The day a partition name stands for, null for any other table (the DEFAULT partition, the old table). */
export function partitionDay(name: string): Day | null {
  const m = PARTITION.exec(name);
  if (!m) return null;
  const day = `${m[1]}-${m[2]}-${m[3]}`;
  const at = new Date(`${day}T00:00:00.000Z`);
  return !Number.isNaN(at.getTime()) && dayOf(at) === day ? day : null;
}
