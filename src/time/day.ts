// "The day" ends at 00:00 UTC (docs/architecture.md, "Rules"), whatever the process's TZ says.

const DAY_MS = 86_400_000;

// Every reservation asks for its day: the last answer is kept (a toISOString per request showed in profiles).
let cachedStart = Number.NaN;
let cachedDay = "";

/** The UTC day of `now` as YYYY-MM-DD: the period of a daily account. */
export function utcDay(now: Date): string {
  const ms = now.getTime();
  if (ms >= cachedStart && ms < cachedStart + DAY_MS) return cachedDay;
  cachedStart = Math.floor(ms / DAY_MS) * DAY_MS;
  cachedDay = new Date(cachedStart).toISOString().slice(0, 10);
  return cachedDay;
}

/** The next 00:00 UTC strictly after `now`: when today's daily account stops applying. */
export function nextResetAt(now: Date): Date {
  return new Date(Math.floor(now.getTime() / DAY_MS) * DAY_MS + DAY_MS);
}

/** The first instant of a UTC day given as YYYY-MM-DD (a daily account's period). */
export function dayStartAt(day: string): Date {
  return new Date(`${day.slice(0, 10)}T00:00:00.000Z`);
}
