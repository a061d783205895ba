import type { Logger } from "pino";

// What operators see of a database fault: one warning when the database stops answering, one line when it is
// back (how long, and what waited), never a line per request (docs/architecture.md, "Database faults"). Fed by
// the code that retries (the ledger's syncs, the request-log writer, the expiry, the heartbeat, key lookups).

export interface DatabaseHealth {
  /** A transient fault of `what` (a short name: "lease sync", "request log"). */
  failed(err: unknown, what: string): void;
  /** A statement succeeded. */
  ok(): void;
  /** False from the first fault until the next success. */
  up(): boolean;
  /** A number shown in the "back" line and the metrics (settlements waiting, log rows buffered). */
  watch(name: string, read: () => number): void;
  stats(): DatabaseHealthStats;
}

export interface DatabaseHealthStats {
  up: boolean;
  outages: number;
  /** Milliseconds of the current outage (0 when up) and of all outages. */
  downMs: number;
  totalDownMs: number;
}

/** The error's code, never its message: a driver's message can quote a statement's parameters. */
const codeOf = (err: unknown) => String((err as { code?: unknown } | null)?.code ?? (err as Error | null)?.name ?? "unknown");

export function createDatabaseHealth(logger: Logger): DatabaseHealth {
  let downSince: number | null = null;
  let outages = 0;
  let totalDownMs = 0;
  const watched = new Map<string, () => number>();
  const readings = () => Object.fromEntries([...watched].map(([name, read]) => [name, read()]));
  return {
    failed(err, what) {
      if (downSince !== null) return;
      downSince = performance.now();
      outages++;
      logger.warn({ what, code: codeOf(err), ...readings() }, "DATABASE_UNREACHABLE: retrying; requests that need it get 503 until it answers");
    },
    ok() {
      if (downSince === null) return;
      const outageMs = Math.round(performance.now() - downSince);
      totalDownMs += outageMs;
      downSince = null;
      logger.info({ outage_ms: outageMs, ...readings() }, "DATABASE_BACK");
    },
    up: () => downSince === null,
    watch(name, read) {
      watched.set(name, read);
    },
    stats: () => ({
      up: downSince === null,
      outages,
      downMs: downSince === null ? 0 : Math.round(performance.now() - downSince),
      totalDownMs,
    }),
  };
}
