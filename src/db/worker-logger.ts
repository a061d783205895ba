import { Logger as WorkerLogger } from "graphile-worker";
import type { Logger } from "pino";
import { isTransientDbError } from "./faults.js";

/**
 * graphile-worker's log messages on the gateway's pino logger (component "worker"), at the matching level. Here
 * rather than in src/jobs because migrations (src/db) run graphile-worker's too, and the db layer imports no
 * service folder. The worker retries a lost connection itself (src/jobs/worker-pool.ts makes every transient
 * fault one it retries) and says so at error level each time; with
 * `onFault` those lines go to the database health instead (one warning per outage) and stay at debug here.
 */
export function workerLogger(logger: Logger, onFault?: (err: unknown) => void): WorkerLogger {
  const log = logger.child({ component: "worker" });
  return new WorkerLogger(() => (level, message, meta) => {
    const error = (meta as { error?: unknown } | undefined)?.error;
    if (onFault && (level === "error" || level === "warning") && isTransientDbError(error)) {
      onFault(error);
      return log.debug(message);
    }
    const method = level === "error" ? "error" : level === "warning" ? "warn" : level === "debug" ? "debug" : "info";
    log[method](message);
  });
}
