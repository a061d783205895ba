import type { Logger } from "pino";
import { parseConfig } from "../../src/config/load.js";
import type { Config, ConfigInput } from "../../src/config/schema.js";
import type { Pool } from "../../src/db/pool.js";
import type { Clock } from "../../src/time/clock.js";
import { taskList } from "../../src/jobs/tasks.js";
import { createServices, type Services } from "../../src/runtime/services.js";
import { createApp } from "../../src/runtime/app.js";
import { listen } from "../../src/server/listen.js";
import { transportOf } from "../../src/runtime/connection-bounds.js";
import { createLogger } from "../../src/logger.js";
import { createTestDatabase, type TestDatabase } from "./db.js";

export interface TestGateway {
  url: string;
  services: Services;
  db: TestDatabase;
  close(): Promise<void>;
}

export const testConfig = (overrides: Partial<ConfigInput> = {}) =>
  parseConfig(
    {
      providers: { main: { protocol: "openai", base_url: "http://127.0.0.1:9/v1" } },
      models: { m1: { kind: "chat", upstream: "m1", targets: ["main"] } },
      ...overrides,
      // scrypt at 2^17 costs 128 MiB and a few hundred ms per hash: the suite creates many users.
      auth: { password_hash: { log_n: 10 }, ...overrides.auth },
    },
    "test config",
  );

/** The default connection bounds, for tests that build their own app. */
export const testTransport = () => transportOf(testConfig().server);

/**
 * The real app on a real HTTP port and a fresh database of its own. With `pool`, the services use that pool (one
 * through a fault proxy, say; the caller ends it) while `db.pool` stays a direct road for the test's own reads.
 * With `loaded`, a config already validated (a file loaded as `serve --config` loads it) is served as it is,
 * instead of `config` laid over the test config.
 */
export async function startTestGateway(
  opts: {
    config?: Partial<ConfigInput>;
    loaded?: Config;
    env?: NodeJS.ProcessEnv;
    db?: TestDatabase;
    pool?: Pool;
    /** The request log's database apart (analytics.database_url): a migrated test database's pool. */
    logPool?: Pool;
    logger?: Logger;
    clock?: Clock;
  } = {},
): Promise<TestGateway> {
  const db = opts.db ?? (await createTestDatabase());
  const config = opts.loaded ?? testConfig(opts.config);
  const services = await createServices({
    config,
    pool: opts.pool ?? db.pool,
    logPool: opts.logPool,
    logger: opts.logger ?? createLogger("silent"),
    env: opts.env ?? {},
    clock: opts.clock,
  });
  const http = await listen(createApp(services), "127.0.0.1", 0, transportOf(config.server));
  return {
    url: http.url,
    services,
    db,
    async close() {
      await http.close(0);
      await services.close();
      if (!opts.db) await db.drop();
    },
  };
}

/** The gateway's graphile-worker tasks on a test gateway's services and database, for `runOnce` in a test. */
export function gatewayTasks(gw: TestGateway) {
  const s = gw.services;
  return taskList({
    sessions: s.auth.sessions,
    ledger: s.ledger,
    pool: gw.db.pool,
    logPool: s.logPool,
    retention: s.config.retention,
    partitionsAheadDays: s.config.analytics.partitions_ahead_days,
    transfers: s.transfers,
  });
}
