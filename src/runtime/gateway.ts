import type { Logger } from "pino";
import type { Config } from "../config/schema.js";
import { faultCode, waitForDatabase } from "../db/faults.js";
import { ensureAhead } from "../analytics/partitions.js";
import { runMigrations } from "../db/migrate.js";
import { warmPool } from "../db/pool.js";
import { startWorker, type BackgroundWorker } from "../jobs/worker.js";
import { startVideoPoller } from "../media/video-poller.js";
import { createApp, createMetricsApp } from "./app.js";
import { checkListenAddress, listen, type HttpServer } from "../server/listen.js";
import { openAnalyticsDatabase, openDatabase, type AnalyticsDatabase } from "./database.js";
import { transportOf } from "./connection-bounds.js";
import { createServices, videoPollDeps, type Services } from "./services.js";

export interface GatewayOptions {
  config: Config;
  dataDir: string;
  env: NodeJS.ProcessEnv;
  logger: Logger;
  worker: boolean;
}

export interface RunningGateway {
  url: string;
  /** The address of GET /metrics when it has one of its own (config.metrics.listen). */
  metricsUrl?: string;
  services: Services;
  /** Drains HTTP, then stops the worker, the database pool and (when embedded) PostgreSQL. Idempotent. */
  stop(): Promise<void>;
  /** Ends a running drain at once; the rest of stop() (worker, database) still runs. */
  hurry(): void;
}

/** What `gateway serve` runs: database, migrations, services, the video poller, HTTP server and background worker. */
export async function startGateway(opts: GatewayOptions): Promise<RunningGateway> {
  const { config, logger } = opts;
  const cleanups: (() => Promise<void>)[] = [];
  const unwind = async () => {
    for (const cleanup of cleanups.splice(0).reverse()) {
      await cleanup().catch((err: Error) => logger.error({ err: err.message }, "shutdown step failed"));
    }
  };
  // A taken port is found in a moment here, not after the database has been set up (and then stopped again).
  await checkListenAddress(config.server.host, config.server.port);
  if (config.metrics.enabled && config.metrics.listen) await checkListenAddress(config.metrics.listen.host, config.metrics.listen.port);
  try {
    const db = await openDatabase({ config, env: opts.env, dataDir: opts.dataDir, logger, mode: "own" });
    cleanups.push(() => db.close());
    await waitForDatabase(db.pool, {
      timeoutMs: config.database.startup_timeout_seconds * 1000,
      onWaiting: (err) =>
        logger.warn(
          { code: faultCode(err), timeout_seconds: config.database.startup_timeout_seconds },
          "DATABASE_UNREACHABLE at start: waiting for it",
        ),
    });
    await runMigrations(db.pool, logger);
    const analytics = await openLogDatabase(opts, cleanups);
    // Today's partition and the next days', on the log's database, before the first request is logged (the DEFAULT
    // partition would take its row anyway, but then the day's partition must move it later).
    await ensureAhead(analytics?.pool ?? db.pool, config.analytics.partitions_ahead_days);
    const services = await createServices({ config, pool: db.pool, logPool: analytics?.pool, logger, env: opts.env });
    cleanups.push(() => services.close());
    // Every serving process polls due video jobs, worker or not; stopped before the services it polls with.
    const videoPoller = startVideoPoller(videoPollDeps(services), services.health);
    cleanups.push(() => videoPoller.stop());
    let worker: BackgroundWorker | undefined;
    if (opts.worker) {
      worker = await startWorker({
        pool: db.pool,
        logger,
        concurrency: config.worker.concurrency,
        onFault: (err) => services.health.failed(err, "background worker"),
        deps: {
          sessions: services.auth.sessions,
          ledger: services.ledger,
          pool: db.pool,
          logPool: services.logPool,
          retention: config.retention,
          partitionsAheadDays: config.analytics.partitions_ahead_days,
          transfers: services.transfers,
        },
      });
      cleanups.push(() => worker!.stop());
    }
    // Before the main address, so that it closes after it: the drain can still be watched.
    const { exposition } = services.metrics;
    const metricsAt = config.metrics.listen;
    let metricsUrl: string | undefined;
    if (exposition && metricsAt) {
      const served = await listen(createMetricsApp(services, exposition), metricsAt.host, metricsAt.port, transportOf(config.server));
      cleanups.push(() => served.close(0));
      metricsUrl = served.url;
      logger.info({ url: metricsUrl }, "metrics listening");
    }
    // The connections the first burst will need, before the address is open (docs/performance.md, "Cold start").
    await warmPool(db.pool, config.database.pool_size);
    const http: HttpServer = await listen(createApp(services), config.server.host, config.server.port, transportOf(config.server));
    cleanups.push(() => http.close(config.server.drain_timeout_ms));
    logger.info({ url: http.url, database: db.source, worker: Boolean(worker) }, "gateway listening");
    let stopping: Promise<void> | undefined;
    return {
      url: http.url,
      metricsUrl,
      services,
      stop: () => (stopping ??= unwind()),
      hurry: () => http.closeConnections(),
    };
  } catch (err) {
    await unwind();
    throw err;
  }
}

/**
 * The request log's own database when one is configured, waited for and migrated: it has the gateway's schema too
 * (one set of migrations everywhere), and only the log's tables are used there.
 */
async function openLogDatabase(opts: GatewayOptions, cleanups: (() => Promise<void>)[]): Promise<AnalyticsDatabase | null> {
  const { config, logger } = opts;
  const analytics = openAnalyticsDatabase({ config, env: opts.env, logger });
  if (!analytics) return null;
  cleanups.push(() => analytics.close());
  await waitForDatabase(analytics.pool, {
    timeoutMs: config.database.startup_timeout_seconds * 1000,
    onWaiting: (err) => logger.warn({ code: faultCode(err), database: "analytics" }, "DATABASE_UNREACHABLE at start: waiting for it"),
  });
  await runMigrations(analytics.pool, logger);
  logger.info({ database: analytics.description }, "request log on its own database");
  return analytics;
}
