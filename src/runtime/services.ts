import type { Logger } from "pino";
import type { AppDeps } from "./app.js";
import { createIdempotency } from "../balances/idempotency.js";
import { createResellerAccounts } from "../balances/reseller-accounts.js";
import { startOutboxDrainer, type OutboxDrainer } from "../analytics/outbox-drainer.js";
import { outboxInserts, outboxRewrites } from "../analytics/outbox-sql.js";
import { insertRows, rewriteRows } from "../analytics/row-json.js";
import { createRequestLogWriter } from "../analytics/writer.js";
import type { RequestLogWriter } from "../analytics/types.js";
import { createAuthServices } from "../auth/index.js";
import { createCatalog } from "../catalog/catalog.js";
import { recordModelsFirstSeen } from "../catalog/first-seen.js";
import type { Config } from "../config/schema.js";
import type { Pool, TimedQuery } from "../db/pool.js";
import type { VideoPollDeps } from "../media/video-poll.js";
import { createMetering } from "../metering/meter.js";
import { createPrometheusMetrics } from "../metrics/prometheus.js";
import { noMetrics, type LedgerMetrics } from "../metrics/recorders.js";
import { unpricedEvaluators } from "../metering/pricing.js";
import { createProviders } from "../providers/registry.js";
import { createSafeDownloader } from "../providers/safe-download.js";
import { measureClockOffset, offsetClock, type Clock } from "../time/clock.js";
import { createQuotaLedger } from "../quota/ledger.js";
import type { Instance, QuotaLedger } from "../quota/types.js";
import type { Journal } from "../quota/index.js";
import { createReserveResets } from "../balances/reserve-resets.js";
import { createTransfers } from "../transfers/transfers.js";
import { registerInstance } from "../quota/instances.js";
import { createDatabaseHealth, type DatabaseHealth } from "../db/health.js";
import { startListener, type Listener } from "../db/listener.js";
import { createBodyBudget } from "../server/body-budget.js";
import { startExpirySweep } from "../quota/expiry-sweep.js";

/** Everything the HTTP app needs, plus what only the process lifecycle touches. */
export interface Services extends AppDeps {
  requestLog: RequestLogWriter;
  /** The statements that commit a resolved request's log record with its charge: the log itself, or its outbox. */
  journal: Journal;
  /** The drainer of the log's outbox: a serving process whose log lives apart (analytics.database_url). */
  outbox: OutboxDrainer | undefined;
  /** The analytics database's faults (the main database's `health` when the log shares it). */
  analyticsHealth: DatabaseHealth;
  /** Waits for settlements and transfer completions, closes the leases, flushes the request log, stops the heartbeat, closes upstream pools. */
  close(): Promise<void>;
}

export interface ServiceOptions {
  config: Config;
  pool: Pool;
  /** The request log's database (analytics.database_url); the main pool when unset. */
  logPool?: Pool;
  logger: Logger;
  env?: NodeJS.ProcessEnv;
  /**
   * True for a process that serves requests (LISTEN for key revocations, instance heartbeat); admin commands
   * pass false.
   */
  serving?: boolean;
  /** The clock of every rule that reads the date (tests move it). */
  clock?: Clock;
}

/** What the video poller needs of a process's services (src/media/video-poll.ts). */
export function videoPollDeps(services: Services): VideoPollDeps {
  const { pool, providers, config, logger, clock, journal } = services;
  return { pool, providers, config, clock, logger, logRows: journal.insert };
}

/** The composition root shared by `serve`, the admin commands and the tests. */
export async function createServices(opts: ServiceOptions): Promise<Services> {
  const { config, pool, logger } = opts;
  const logPool = opts.logPool ?? pool;
  const serving = opts.serving ?? true;
  const probe: TimedQuery = { text: "select 1", query_timeout: config.database.query_timeout_ms };
  const health = createDatabaseHealth(logger, { probe: () => pool.query(probe) });
  const { analyticsHealth, journal } = logDestination(logPool !== pool, logger, health, () => logPool.query(probe));
  // One LISTEN connection per serving process: key revocations, and the ledger's give-back requests.
  const listener = serving ? await startListener({ pool, logger, health }) : undefined;
  const auth = await createAuthServices({ pool, config, logger, env: opts.env ?? process.env, listener, health });
  const { quota, database } = config;
  // Admin commands serve nothing: their metrics would never be read.
  const metrics = serving && config.metrics.enabled ? createPrometheusMetrics(config) : noMetrics;
  const instance = serving ? await registerServingInstance(pool, config, health, logger) : undefined;
  // The day is the database's (docs/architecture.md, "Rules"): a serving process follows it at every heartbeat, an admin command
  // measures it once.
  const clockOffset = instance ? undefined : await measureClockOffset(pool);
  const clock = opts.clock ?? offsetClock(() => instance?.clockOffsetMs() ?? clockOffset ?? 0);
  const ledger = configuredLedger(pool, config, { instance, clock, health, logger, metrics: metrics.ledger, listener, journal });
  const expiry = serving ? startExpirySweep(ledger, quota.expiry_sweep_seconds * 1000, logger, health) : undefined;
  const requestLog = configuredRequestLog(logPool, config, logger, analyticsHealth);
  analyticsHealth.watch("log_rows_waiting", () => requestLog.stats().buffered);
  const outbox = logPool !== pool && serving ? configuredOutbox(pool, logPool, config, logger, { health, analyticsHealth }) : undefined;
  const providers = createProviders(config);
  // One SSRF-checked downloader per process: the image routes fetch the links upstreams answer with.
  const download = createSafeDownloader(config.media.download);
  // Admin commands list no models: only a serving process records when its models first appeared.
  const firstSeen = serving ? await recordModelsFirstSeen(pool, Object.keys(config.models), clock.now()) : undefined;
  const catalog = createCatalog(config, firstSeen);
  for (const unpriced of serving ? unpricedEvaluators(catalog, config) : []) {
    logger.warn(unpriced, "SYSTEMONE_RATE_CARD_MISSING: no rate card prices this upstream; its cost is logged as unknown (null)");
  }
  const metering = createMetering({ config, ledger, requestLog, logger, clock, metrics: metrics.upstream });
  const bodyBudget = createBodyBudget(config.systemone.admission_budget_bytes);
  const idempotency = createIdempotency({
    pool,
    timeoutMs: database.request_timeout_ms,
    onFault: (err) => health.failed(err, "money call"),
  });
  metrics.watch({ requestLog, bodyBudget, health, ledger, outbox });
  const transfers = createTransfers({ pool, config, clock, ledger, logger, health });
  return {
    config,
    pool,
    logPool,
    health,
    analyticsHealth,
    journal,
    outbox,
    logger,
    auth,
    catalog,
    ledger,
    providers,
    download,
    requestLog,
    metering,
    bodyBudget,
    requestBodyBudget: createBodyBudget(config.server.body_budget_bytes),
    resellers: createResellerAccounts({ ledger, users: auth.users, idempotency }),
    resets: createReserveResets({ ledger, pool, users: auth.users, config, clock, idempotency }),
    transfers,
    metrics,
    clock,
    async close() {
      await expiry?.stop();
      await transfers.close();
      await metering.drain();
      await ledger.close();
      // After the ledger's last syncs, which write the last records.
      await outbox?.close();
      await requestLog.close();
      await instance?.stop();
      await providers.close();
      await auth.keyAuth.close();
      await listener?.close();
    },
  };
}

/**
 * The journal that writes the request log and the health of the log's database. With the log apart, a resolved
 * request's record commits with its charge in the outbox on the main database, and the drainer moves it
 * (docs/billing.md, "The request log apart").
 */
function logDestination(
  apart: boolean,
  logger: Logger,
  health: DatabaseHealth,
  probe: () => Promise<unknown>,
): { analyticsHealth: DatabaseHealth; journal: Journal } {
  if (!apart) return { analyticsHealth: health, journal: { insert: insertRows, rewrite: rewriteRows } };
  return {
    analyticsHealth: createDatabaseHealth(logger.child({ database: "analytics" }), {
      probe,
      consequence: "answers go on; their log rows wait in the outbox until it answers",
    }),
    journal: { insert: outboxInserts, rewrite: outboxRewrites },
  };
}

/** A serving process's row in the instances table, kept alive by its heartbeat. */
function registerServingInstance(pool: Pool, config: Config, health: DatabaseHealth, logger: Logger): Promise<Instance> {
  const { quota, database } = config;
  return registerInstance(pool, {
    heartbeatMs: quota.heartbeat_seconds * 1000,
    timeoutMs: quota.instance_timeout_seconds * 1000,
    statementTimeoutMs: database.query_timeout_ms,
    health,
    onError: (err) => logger.warn({ err: err.message }, "instance heartbeat failed"),
    onFenced: (fencedId) =>
      logger.warn({ instance_id: fencedId }, "INSTANCE_FENCED: this process was presumed dead; it drops its leases and registers again"),
  });
}

/** What the ledger takes from the rest of the process besides the config. */
interface LedgerParts {
  instance: Instance | undefined;
  clock: Clock;
  health: DatabaseHealth;
  logger: Logger;
  metrics: LedgerMetrics;
  listener: Listener | undefined;
  journal: Journal;
}

function configuredLedger(pool: Pool, config: Config, parts: LedgerParts): QuotaLedger {
  const { quota, database } = config;
  const { logger } = parts;
  return createQuotaLedger(pool, {
    instance: parts.instance,
    clock: parts.clock,
    maxHoldSeconds: quota.max_hold_seconds,
    instanceTimeoutSeconds: quota.instance_timeout_seconds,
    leaseIdleMs: quota.lease_idle_ms,
    commitGroupMs: quota.commit_group_ms,
    configRevision: BigInt(Math.floor(Date.now() / 1000)),
    // A metered request's log row (or its outbox record) commits in the statement that posts or voids its hold.
    journal: parts.journal,
    health: parts.health,
    admissionTimeoutMs: database.request_timeout_ms,
    statementTimeoutMs: database.query_timeout_ms,
    shutdownGraceMs: quota.shutdown_grace_seconds * 1000,
    onSyncError: (err, leaseId) => logger.error({ err, lease_id: leaseId }, "LEASE_SYNC_FAILED"),
    metrics: parts.metrics,
    listener: parts.listener,
  });
}

function configuredRequestLog(pool: Pool, config: Config, logger: Logger, health: DatabaseHealth): RequestLogWriter {
  return createRequestLogWriter({
    pool,
    logger,
    batchSize: config.analytics.batch_size,
    flushIntervalMs: config.analytics.flush_interval_ms,
    maxBuffered: config.analytics.max_buffered,
    statementTimeoutMs: config.database.query_timeout_ms,
    health,
    closeGraceMs: config.quota.shutdown_grace_seconds * 1000,
  });
}

function configuredOutbox(
  main: Pool,
  analytics: Pool,
  config: Config,
  logger: Logger,
  healths: { health: DatabaseHealth; analyticsHealth: DatabaseHealth },
): OutboxDrainer {
  const outbox = startOutboxDrainer({
    main,
    analytics,
    logger,
    batchSize: config.analytics.outbox_batch_size,
    intervalMs: config.analytics.outbox_interval_ms,
    statementTimeoutMs: config.database.query_timeout_ms,
    mainHealth: healths.health,
    analyticsHealth: healths.analyticsHealth,
    closeGraceMs: config.quota.shutdown_grace_seconds * 1000,
  });
  healths.analyticsHealth.watch("outbox_rows_waiting", () => outbox.stats().depth);
  return outbox;
}
