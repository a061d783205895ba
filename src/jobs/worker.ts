import { Logger as WorkerLogger, run, runMigrations, type Runner } from "graphile-worker";
import type { Logger } from "pino";
import type { Pool } from "../db/pool.js";
import { crontab, taskList, type JobDeps } from "./tasks.js";

function workerLogger(logger: Logger): WorkerLogger {
  const log = logger.child({ component: "worker" });
  return new WorkerLogger(() => (level, message) => {
    const method = level === "error" ? "error" : level === "warning" ? "warn" : level === "debug" ? "debug" : "info";
    log[method](message);
  });
}

export interface BackgroundWorker {
  stop(): Promise<void>;
}

/** Starts graphile-worker on the gateway's pool (its schema is migrated first, under its own lock). */
export async function startWorker(opts: {
  pool: Pool;
  logger: Logger;
  concurrency: number;
  deps: JobDeps;
}): Promise<BackgroundWorker> {
  const runner: Runner = await run({
    pgPool: opts.pool,
    concurrency: opts.concurrency,
    noHandleSignals: true,
    pollInterval: 2_000,
    taskList: taskList(opts.deps),
    crontab,
    logger: workerLogger(opts.logger),
  });
  return { stop: () => runner.stop() };
}

export async function migrateWorkerSchema(pool: Pool, logger: Logger): Promise<void> {
  await runMigrations({ pgPool: pool, logger: workerLogger(logger) });
}
