import type { Logger } from "pino";
import { createRequestLogWriter } from "../analytics/writer.js";
import type { RequestLogWriter } from "../analytics/types.js";
import { createAuthServices } from "../auth/index.js";
import type { AuthServices } from "../auth/types.js";
import { createCatalog, type Catalog } from "../catalog/catalog.js";
import type { Config } from "../config/schema.js";
import type { Pool } from "../db/pool.js";
import { createMetering, type Metering } from "../metering/meter.js";
import { createProviders, type Providers } from "../providers/registry.js";
import { createQuotaLedger } from "../quota/ledger.js";
import { registerInstance } from "../quota/instances.js";
import type { QuotaLedger } from "../quota/types.js";

export interface Services {
  config: Config;
  pool: Pool;
  logger: Logger;
  auth: AuthServices;
  catalog: Catalog;
  ledger: QuotaLedger;
  providers: Providers;
  requestLog: RequestLogWriter;
  metering: Metering;
  /** Waits for settlements, flushes the request log, stops the heartbeat, closes upstream pools. */
  close(): Promise<void>;
}

export interface ServiceOptions {
  config: Config;
  pool: Pool;
  logger: Logger;
  env?: NodeJS.ProcessEnv;
  /**
   * True for a process that serves requests (LISTEN for key revocations, instance heartbeat); admin commands
   * pass false.
   */
  serving?: boolean;
}

/** The composition root shared by `serve`, the admin commands and the tests. */
export async function createServices(opts: ServiceOptions): Promise<Services> {
  const { config, pool, logger } = opts;
  const serving = opts.serving ?? true;
  const auth = await createAuthServices({ pool, config, logger, env: opts.env ?? process.env, listen: serving });
  const ledger = createQuotaLedger(pool, { maxHoldSeconds: config.quota.max_hold_seconds });
  const instance = serving
    ? await registerInstance(pool, { onError: (err) => logger.warn({ err: err.message }, "instance heartbeat failed") })
    : null;
  const requestLog = createRequestLogWriter({
    pool,
    logger,
    batchSize: config.analytics.batch_size,
    flushIntervalMs: config.analytics.flush_interval_ms,
    maxBuffered: config.analytics.max_buffered,
  });
  const providers = createProviders(config);
  const metering = createMetering({ config, ledger, requestLog, instanceId: instance?.id ?? "", logger });
  return {
    config,
    pool,
    logger,
    auth,
    catalog: createCatalog(config),
    ledger,
    providers,
    requestLog,
    metering,
    async close() {
      await metering.drain();
      await requestLog.close();
      await instance?.stop();
      await providers.close();
      await auth.keyAuth.close();
    },
  };
}
