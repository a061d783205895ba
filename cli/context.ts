import { existsSync } from "node:fs";
import path from "node:path";
import type { Logger } from "pino";
import { demoConfig } from "../src/config/demo.js";
import { loadConfigFile, parseConfig } from "../src/config/load.js";
import type { Config } from "../src/config/schema.js";
import { createLogger, logDestination } from "../src/logger.js";
import { openAnalyticsDatabase, openDatabase, type OpenDatabase } from "../src/runtime/database.js";
import { runMigrations } from "../src/db/migrate.js";
import { createServices, type Services } from "../src/runtime/services.js";

export interface CommonOptions {
  config?: string;
  dataDir?: string;
  json?: boolean;
  /** Lets an admin command create a new embedded database; without it a missing one is an error. */
  init?: boolean;
}

export const dataDirOf = (opts: CommonOptions) => path.resolve(opts.dataDir ?? process.env.GATEWAY_DATA_DIR ?? ".gateway");

/** `--config`, else GATEWAY_CONFIG, else ./gateway.yaml when it exists; undefined when there is none. */
export function configPathOf(opts: CommonOptions): string | undefined {
  const explicit = opts.config ?? process.env.GATEWAY_CONFIG;
  if (explicit) return path.resolve(explicit);
  return existsSync("gateway.yaml") ? path.resolve("gateway.yaml") : undefined;
}

// Placeholder address: admin commands never call the upstream, they only need the demo catalog and plans.
export const builtInDemoConfig = (mockUrl = "http://127.0.0.1:9", mockKey = "mock-key") =>
  parseConfig(demoConfig(mockUrl, mockKey), "built-in demo config");

/**
 * Admin commands use the config file when there is one, else the built-in demo config `npm start` runs on. They
 * never call a provider, so a provider secret whose variable is unset is not their problem (only serve's).
 */
export function loadAdminConfig(opts: CommonOptions): Config {
  const file = configPathOf(opts);
  return file ? loadConfigFile(file, process.env, { deferProviderSecrets: true }) : builtInDemoConfig();
}

/** Admin commands log only warnings, to stderr, so stdout stays clean for `--json`; pretty when stderr is a terminal. */
export const adminLogger = (): Logger =>
  createLogger(process.env.GATEWAY_LOG_LEVEL ?? "warn", process.stderr.isTTY ? logDestination("pretty", 2) : process.stderr);

/**
 * The database of an admin command: the running embedded server when `serve` is up, else one started for the
 * command (created only with `--init`), or DATABASE_URL's. Says which on stderr, so a command run from the wrong
 * directory shows it; stdout stays the command's output (`--json`).
 */
export async function openAdminDatabase(opts: CommonOptions, config: Config, logger: Logger): Promise<OpenDatabase> {
  const dataDir = dataDirOf(opts);
  const db = await openDatabase({ config, env: process.env, dataDir, logger, mode: "attach-or-start", poolSize: 2, init: !!opts.init });
  process.stderr.write(`gateway: database: ${db.description}\n`);
  return db;
}

/**
 * Runs `fn` with services on the gateway's database: the running embedded server when `serve` is up, else
 * one started for the duration of the command. Migrations are applied first, so a fresh data dir works.
 */
export async function withServices<T>(opts: CommonOptions, fn: (services: Services) => Promise<T>): Promise<T> {
  const config = loadAdminConfig(opts);
  const logger = adminLogger();
  const db = await openAdminDatabase(opts, config, logger);
  // The request log's own database when it lives apart: the commands that read the log (`gateway incidents scan`)
  // read it there, as `serve` does.
  const analytics = openAnalyticsDatabase({ config, env: process.env, logger });
  try {
    await runMigrations(db.pool, logger);
    const services = await createServices({ config, pool: db.pool, logPool: analytics?.pool, logger, serving: false });
    try {
      return await fn(services);
    } finally {
      await services.close();
    }
  } finally {
    await analytics?.close();
    await db.close();
  }
}
