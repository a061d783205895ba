import type { Logger } from "pino";
import { isTransientDbError } from "../db/faults.js";
import type { DatabaseHealth } from "../db/health.js";
import type { QuotaLedger } from "./types.js";

/**
 * Every serving process runs the ledger's expiry itself, whether or not it runs the background worker: with
 * every process on `--no-worker`, a killed process's leased units (and durable holds past their expiry) must
 * still come back. Several processes running it at once is harmless (expire-sql.ts skips what another locked).
 * The first run is jittered so that processes started together do not run it in step.
 */
export function startExpirySweep(
  ledger: QuotaLedger,
  intervalMs: number,
  logger: Logger,
  health: DatabaseHealth,
): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const run = () => {
    running ??= ledger
      .expire()
      .then(
        ({ fenced, leases, durable }) => {
          health.ok();
          if (fenced + leases + durable > 0)
            logger.info({ fenced, leases, durable }, "fenced silent processes; expired abandoned leases and durable holds");
        },
        (err: Error) => {
          if (isTransientDbError(err)) health.failed(err, "ledger expiry");
          else logger.warn({ err: err.message }, "ledger expiry failed; it runs again");
        },
      )
      .finally(() => {
        running = undefined;
      });
  };
  let timer: NodeJS.Timeout | undefined;
  const first = setTimeout(
    () => {
      run();
      timer = setInterval(run, intervalMs);
      timer.unref();
    },
    Math.floor(Math.random() * intervalMs),
  );
  first.unref();
  return {
    async stop() {
      clearTimeout(first);
      if (timer) clearInterval(timer);
      await running;
    },
  };
}
