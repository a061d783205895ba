import type { Backoff } from "../db/backoff.js";

// One sync in flight per lease; whatever arrives meanwhile goes into the next one, so settlements ready together
// share one commit (group commit) and their callers, which deliver the answers, wait for it.

/** Retries of a transient fault back off exponentially, capped, with jitter (the first retry after 50-100 ms). */
export const SYNC_RETRY: Backoff = { firstMs: 50, maxMs: 2000, jitter: true };
/** The longest pause of a retry while a request waits for the sync (see pause()). */
const WAITING_RETRY_MS = 250;

/** When a lease's syncs run: `step` is one sync (or one retry of it). */
export class SyncLoop {
  /** Another turn follows the one running (something was queued, or a sync is to be retried). */
  again = false;
  private running: Promise<void> | undefined;
  private urgent = false;
  private wake: (() => void) | undefined;
  /** Cuts short the pause of a sync retrying a transient fault (see pause()). */
  private cutPause: (() => void) | undefined;

  constructor(
    /** How long a settlement may wait for others to share its commit (0: the next turn of the event loop). */
    private readonly groupMs: number,
    private readonly step: () => Promise<void>,
  ) {}

  /**
   * Runs a sync soon: in the next turn of the event loop when `urgent` (a request waits, or units are to be
   * given back), else after `groupMs`, so that settlements under load share one commit.
   */
  schedule(urgent = true): void {
    if (urgent) {
      this.urgent = true;
      this.wake?.();
    }
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop();
  }

  /** Whether a sync is running or due. */
  busy(): boolean {
    return this.running !== undefined;
  }

  /** Resolves when no sync is running or due. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Something starts waiting for the lease: a pause in progress is cut short (see pause()). */
  hurry(): void {
    this.cutPause?.();
  }

  /**
   * The pause before a retry. A request waiting for the attempt (`waiting`: a reservation in it, sent again when
   * its outcome is unknown) keeps it short from the start; one that starts waiting for this lease meanwhile (a
   * reservation, or an answer waiting for its charge's commit) cuts it short (to WAITING_RETRY_MS after the fault):
   * otherwise, once the database is back, it would wait out the rest of a pause of up to SYNC_RETRY.maxMs, and be
   * refused 503 at database.request_timeout_ms although the database answers. Not shorter, so that a stream of
   * requests during an outage is not a stream of attempts. With nothing waiting (releases, give-backs) the backoff
   * runs its course.
   */
  pause(ms: number, waiting: boolean): Promise<void> {
    if (waiting) ms = Math.min(ms, WAITING_RETRY_MS);
    const faultAt = performance.now();
    return new Promise((resolve) => {
      const done = () => {
        this.cutPause = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.cutPause = () => {
        this.cutPause = undefined;
        const left = WAITING_RETRY_MS - (performance.now() - faultAt);
        if (WAITING_RETRY_MS >= ms) return;
        clearTimeout(timer);
        setTimeout(done, Math.max(0, left));
      };
    });
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.again = false;
        await new Promise<void>((resolve) => {
          if (this.urgent) return void setImmediate(resolve);
          const timer = setTimeout(resolve, this.groupMs);
          this.wake = () => {
            clearTimeout(timer);
            setImmediate(resolve);
          };
        });
        this.wake = undefined;
        this.urgent = false;
        await this.step();
      } while (this.again);
    } finally {
      // In the same turn as the last check of `again`: a schedule() after it starts a new loop.
      this.running = undefined;
    }
  }
}
