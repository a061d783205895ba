import path from "node:path";
import type { Logger } from "pino";
import type { Config } from "../config/schema.js";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../db/embedded.js";
import { faultCode } from "../db/faults.js";
import { createPool, type Pool } from "../db/pool.js";

export interface OpenDatabase {
  pool: Pool;
  /** "external" when DATABASE_URL or database.url chose the server, else where the embedded one listens. */
  source: "external" | "embedded";
  /** Which database, for the operator: the URL without its password, or the embedded cluster's directory. */
  description: string;
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
  /** False: an embedded cluster that does not exist yet is an error instead of being created. Default true. */
  init?: boolean;
}

function withoutPassword(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = "";
    return parsed.toString();
  } catch {
    return "(an unparsable URL)";
  }
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
      description: `external PostgreSQL ${withoutPassword(external)} (${opts.env.DATABASE_URL ? "DATABASE_URL" : "database.url"})`,
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
    init: opts.init,
    log: (line) => opts.logger.info(line),
  });
  const pool = createPool(embedded.url, poolSize, onPoolError, timeouts);
  return {
    pool,
    source: "embedded",
    description: `embedded PostgreSQL in ${path.join(path.resolve(opts.dataDir), "pg")} (${embedded.owned ? "started for this command" : "the running gateway's"})`,
    async close() {
      closing = true;
      await pool.end();
      await embedded.stop();
    },
  };
}

/** The request log's own database (docs/operations.md, "The request log apart"), when one is configured. */
export interface AnalyticsDatabase {
  pool: Pool;
  /** The URL without its password, and where it came from. */
  description: string;
  close(): Promise<void>;
}

/**
 * ANALYTICS_DATABASE_URL (or analytics.database_url) puts the request log on a PostgreSQL of its own; null when
 * neither is set (the log shares the main database).
 */
export function openAnalyticsDatabase(opts: Pick<OpenDatabaseOptions, "config" | "env" | "logger">): AnalyticsDatabase | null {
  const url = opts.env.ANALYTICS_DATABASE_URL || opts.config.analytics.database_url;
  if (!url) return null;
  const { database, analytics } = opts.config;
  let closing = false;
  const pool = createPool(
    url,
    analytics.pool_size,
    (err) => {
      if (!closing) opts.logger.debug({ code: faultCode(err), database: "analytics" }, "idle database connection lost");
    },
    { connectTimeoutMs: database.connect_timeout_ms, queryTimeoutMs: database.query_timeout_ms },
  );
  return {
    pool,
    description: `external PostgreSQL ${withoutPassword(url)} (${opts.env.ANALYTICS_DATABASE_URL ? "ANALYTICS_DATABASE_URL" : "analytics.database_url"})`,
    close: () => {
      closing = true;
      return pool.end();
    },
  };
}
