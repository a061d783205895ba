import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import { runMigrations } from "../../src/db/migrate.js";
import { createPool, type Pool } from "../../src/db/pool.js";
import { createLogger } from "../../src/server/logger.js";

export interface TestDatabase {
  url: string;
  pool: Pool;
  drop(): Promise<void>;
}

async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: inject("adminDatabaseUrl") });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A fresh, migrated database of its own, so test files never collide (also with DATABASE_URL set). */
export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const name = `gw_test_${randomBytes(6).toString("hex")}`;
  await admin((c) => c.query(`create database ${name}`));
  const url = new URL(inject("adminDatabaseUrl"));
  url.pathname = `/${name}`;
  const pool = createPool(url.toString(), 10, () => {});
  if (options.migrate !== false) await runMigrations(pool, createLogger("silent"));
  return {
    url: url.toString(),
    pool,
    async drop() {
      await pool.end();
      await admin((c) => c.query(`drop database if exists ${name} with (force)`));
    },
  };
}
