import { Logger as WorkerLogger } from "graphile-worker";
import type { Logger } from "pino";

/**
 * graphile-worker's log messages on the gateway's pino logger (component "worker"), at the matching level. Here
 * rather than in src/jobs because migrations (src/db) run graphile-worker's too, and the db layer imports no
 * service folder.
 */
export function workerLogger(logger: Logger): WorkerLogger {
  const log = logger.child({ component: "worker" });
  return new WorkerLogger(() => (level, message) => {
    const method = level === "error" ? "error" : level === "warning" ? "warn" : level === "debug" ? "debug" : "info";
    log[method](message);
  });
}
