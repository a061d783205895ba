import type { Logger } from "pino";
import type { Config } from "../config/schema.js";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../db/embedded.js";
import { faultCode } from "../db/faults.js";
import { createPool, type Pool } from "../db/pool.js";

export interface OpenDatabase {
  pool: Pool;
  /** "external" when DATABASE_URL or database.url chose the server, else where the embedded one listens. */
  source: "external" | "embedded";
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  config: Config;
  env: NodeJS.ProcessEnv;
  dataDir: string;
  logger: Logger;
  /** `serve` owns the embedded server; admin commands attach to a running one or start it briefly. */
  mode: "own" | "attach-or-start";
  poolSize?: number;
}

/** DATABASE_URL (or database.url) selects an external PostgreSQL; without one, the embedded server is used. */
export async function openDatabase(opts: OpenDatabaseOptions): Promise<OpenDatabase> {
  const external = opts.env.DATABASE_URL || opts.config.database.url;
  const poolSize = opts.poolSize ?? opts.config.database.pool_size;
  const timeouts = { connectTimeoutMs: opts.config.database.connect_timeout_ms, queryTimeoutMs: opts.config.database.query_timeout_ms };
  let closing = false;
  // Once we close, the connections' last words (the embedded server's 57P01 "terminating connection due to
  // administrator command", arriving after pool.end() returned but before the sockets closed) are expected.
  // An idle connection lost is not news by itself (the pool opens another when asked); a fault that lasts is
  // logged once by the database health (src/db/health.ts), so this stays at debug, not a warning per connection.
  const onPoolError = (err: Error) => {
    if (!closing) opts.logger.debug({ code: faultCode(err) }, "idle database connection lost");
  };
  if (external) {
    const pool = createPool(external, poolSize, onPoolError, timeouts);
    return {
      pool,
      source: "external",
      close: () => {
        closing = true;
        return pool.end();
      },
    };
  }
  const embedded: EmbeddedPostgres = await startEmbeddedPostgres({
    dataDir: opts.dataDir,
    port: opts.config.database.embedded_port,
    mode: opts.mode,
    log: (line) => opts.logger.info(line),
  });
  const pool = createPool(embedded.url, poolSize, onPoolError, timeouts);
  return {
    pool,
    source: "embedded",
    async close() {
      closing = true;
      await pool.end();
      await embedded.stop();
    },
  };
}
