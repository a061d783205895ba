import { run, type Runner } from "graphile-worker";
import type { Logger } from "pino";
import type { Pool } from "../db/pool.js";
import { workerLogger } from "../db/worker-logger.js";
import { crontab, taskList, type JobDeps } from "./tasks.js";
import { workerPool } from "./worker-pool.js";

export interface BackgroundWorker {
  stop(): Promise<void>;
}

/**
 * Starts graphile-worker on the gateway's pool (seen through workerPool: a transient fault never ends the
 * process). Its schema is migrated by runMigrations (src/db/migrate.ts) before; run() checks it again, which is
 * then a no-op.
 */
export async function startWorker(opts: {
  pool: Pool;
  logger: Logger;
  concurrency: number;
  deps: JobDeps;
  /** The worker's own connection faults (it retries them) are reported here rather than logged each time. */
  onFault?: (err: unknown) => void;
}): Promise<BackgroundWorker> {
  const runner: Runner = await run({
    pgPool: workerPool(opts.pool),
    concurrency: opts.concurrency,
    noHandleSignals: true,
    pollInterval: 2_000,
    taskList: taskList(opts.deps),
    crontab,
    logger: workerLogger(opts.logger, opts.onFault),
  });
  return { stop: () => runner.stop() };
}
