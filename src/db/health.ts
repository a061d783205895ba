import type { Logger } from "pino";
import { faultCode, withinDeadline } from "./faults.js";

// What operators see of a database fault: one warning when the database stops answering, one line when it is
// back (how long, and what waited), never a line per request (docs/architecture.md, "Database faults"). Fed by
// the code that retries (the ledger's syncs, the request-log writer, the expiry, the heartbeat, key lookups).
// A fault that a retry cures within the grace (a cut connection, a failover) is counted as a blip, not logged.

export interface DatabaseHealth {
  /** A transient fault of `what` (a short name: "lease sync", "request log"). */
  failed(err: unknown, what: string): void;
  /** A statement succeeded. */
  ok(): void;
  /** False from the first fault until the next success. */
  up(): boolean;
  /** A number shown in the outage's lines and the metrics (settlements waiting, log rows buffered). */
  watch(name: string, read: () => number): void;
  stats(): DatabaseHealthStats;
}

export interface DatabaseHealthStats {
  up: boolean;
  /** Faults that lasted past the grace (each logged once), and those a retry cured within it. */
  outages: number;
  blips: number;
  /** Milliseconds of the current fault (0 when up) and of all outages. */
  downMs: number;
  totalDownMs: number;
  /** The watched numbers now (settlements_waiting, log_rows_waiting). */
  readings: Record<string, number>;
}

export interface DatabaseHealthOptions {
  /** A fault is an outage, and logged, once no statement has succeeded for this long. */
  graceMs?: number;
  /**
   * Asked when the grace ends without a success (an idle process hears of no success by itself): answering
   * within the grace makes the fault a blip.
   */
  probe?: () => Promise<unknown>;
  /** What the outage means for clients, in its log line: the main database's by default. */
  consequence?: string;
}

export function createDatabaseHealth(logger: Logger, opts: DatabaseHealthOptions = {}): DatabaseHealth {
  const graceMs = opts.graceMs ?? 1_000;
  let downSince: number | null = null;
  let announced = false;
  let timer: NodeJS.Timeout | undefined;
  let outages = 0;
  let blips = 0;
  let totalDownMs = 0;
  const watched = new Map<string, () => number>();
  /** The most each watched number reached during the current fault (sampled at every failure): what waited. */
  const peaks = new Map<string, number>();
  const readings = () => Object.fromEntries([...watched].map(([name, read]) => [name, read()]));
  const notePeaks = () => {
    for (const [name, read] of watched) peaks.set(name, Math.max(peaks.get(name) ?? 0, read()));
  };
  const health: DatabaseHealth = {
    failed(err, what) {
      notePeaks();
      if (downSince !== null) return;
      downSince = performance.now();
      const announce = () => {
        if (downSince === null || announced) return;
        announced = true;
        outages++;
        logger.warn(
          { what, code: faultCode(err), down_ms: Math.round(performance.now() - downSince), ...readings() },
          `DATABASE_UNREACHABLE: retrying; ${opts.consequence ?? "requests that need it get 503 until it answers"}`,
        );
      };
      timer = setTimeout(() => {
        if (!opts.probe) return announce();
        withinDeadline(graceMs, opts.probe).then(() => health.ok(), announce);
      }, graceMs);
      timer.unref();
    },
    ok() {
      if (downSince === null) return;
      clearTimeout(timer);
      const outageMs = Math.round(performance.now() - downSince);
      downSince = null;
      notePeaks();
      const waited = Object.fromEntries([...peaks].map(([name, peak]) => [`${name}_peak`, peak]));
      peaks.clear();
      if (!announced) {
        blips++;
        return;
      }
      announced = false;
      totalDownMs += outageMs;
      logger.info({ outage_ms: outageMs, ...waited, ...readings() }, "DATABASE_BACK");
    },
    up: () => downSince === null,
    watch(name, read) {
      watched.set(name, read);
    },
    stats: () => ({
      up: downSince === null,
      outages,
      blips,
      downMs: downSince === null ? 0 : Math.round(performance.now() - downSince),
      totalDownMs,
      readings: readings(),
    }),
  };
  return health;
}
