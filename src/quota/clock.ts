// The one clock of every rule that reads the date (DESIGN.md §5): which day's account a reservation draws on,
// when a hold is too old, when a durable hold expires. Injected, so that day and week boundaries are tested by
// moving a clock rather than by waiting for midnight.

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

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
