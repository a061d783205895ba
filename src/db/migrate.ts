import { readFileSync } from "node:fs";
import path from "node:path";
import { drizzle } from "drizzle-orm/node-postgres";
import { migrate } from "drizzle-orm/node-postgres/migrator";
import { runMigrations as runWorkerMigrations } from "graphile-worker";
import type { Logger } from "pino";
import { migrationConnection, type Pool } from "./pool.js";
import { workerLogger } from "./worker-logger.js";

import { packageRoot } from "../package-root.js";

export const migrationsFolder = path.join(packageRoot, "migrations");

// Any constant shared by every gateway process: two `serve` processes starting together must not both apply
// the same migration.
const MIGRATION_LOCK = 7_410_221;

/**
 * Brings the database up to date, the one entry point for every process (serve, admin commands, migrate,
 * tests): the gateway's migrations, then graphile-worker's schema. The latter is here, not left to the worker's
 * own start, so that any process (`serve --no-worker`, an admin command) can enqueue a job inside a business
 * transaction (`select graphile_worker.add_job(...)`) on a fresh database.
 */
export async function runMigrations(pool: Pool, logger: Logger): Promise<void> {
  // A connection of its own, without the pool's statement timeout: a migration may take as long as it takes.
  const client = migrationConnection(pool);
  await client.connect();
  try {
    await client.query("select pg_advisory_lock($1)", [MIGRATION_LOCK]);
    try {
      await migrate(drizzle(client), { migrationsFolder });
    } catch (err) {
      // drizzle's wrapper message is the whole migration file; the database's own message says what is wrong.
      throw err instanceof Error && err.cause instanceof Error ? err.cause : err;
    } finally {
      await client.query("select pg_advisory_unlock($1)", [MIGRATION_LOCK]);
    }
  } finally {
    await client.end();
  }
  // After our lock is released: graphile-worker takes a connection of its own from the pool (under our lock a
  // pool of one would wait for ever), and it guards its migrations against concurrent processes itself.
  await runWorkerMigrations({ pgPool: pool, logger: workerLogger(logger) });
}

function expectedMigrationCount(): number {
  const journal = JSON.parse(readFileSync(path.join(migrationsFolder, "meta", "_journal.json"), "utf8")) as {
    entries: unknown[];
  };
  return journal.entries.length;
}

/** True when every committed migration has been applied to this database. */
export async function migrationsApplied(pool: Pool): Promise<boolean> {
  const expected = expectedMigrationCount();
  try {
    const { rows } = await pool.query<{ n: string }>("select count(*) as n from drizzle.__drizzle_migrations");
    return Number(rows[0]!.n) >= expected;
  } catch {
    return false;
  }
}
