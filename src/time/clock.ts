// The one clock of every rule that reads the date (docs/architecture.md, "Rules"): which day's account a reservation draws on,
// when a hold is too old, when a durable hold expires. Injected, so that day and week boundaries are tested by
// moving a clock rather than by waiting for midnight.

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/**
 * This process's clock moved to the database's (`offsetMs()`: the database's clock minus ours, as last measured):
 * every process then picks the same day at 00:00 UTC, within the measurement's error (half a round trip), whatever
 * its own clock says (docs/architecture.md, "Rules").
 */
export const offsetClock = (offsetMs: () => number): Clock => ({ now: () => new Date(Date.now() + offsetMs()) });

/** The database's clock minus this process's, measured once (a process that does not heartbeat: an admin command). */
export async function measureClockOffset(pool: { query<R>(text: string): Promise<{ rows: R[] }> }): Promise<number> {
  const sent = Date.now();
  const { rows } = await pool.query<{ db_ms: number }>("select (extract(epoch from clock_timestamp()) * 1000)::float8 as db_ms");
  return rows[0]!.db_ms - (sent + Date.now()) / 2;
}

/** A clock that stands still until it is set or advanced (tests, and replaying a scenario). */
export class ManualClock implements Clock {
  private ms: number;

  constructor(start: Date | string) {
    this.ms = new Date(start).getTime();
  }

  now(): Date {
    return new Date(this.ms);
  }

  set(to: Date | string): void {
    this.ms = new Date(to).getTime();
  }

  advance(ms: number): void {
    this.ms += ms;
  }
}
