import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import { createPool, type Pool } from "../../src/db/pool.js";
import { databaseUrl, withAdmin } from "./admin-db.js";

export interface TestDatabase {
  url: string;
  pool: Pool;
  drop(): Promise<void>;
}

/**
 * A fresh database of its own, so test files never collide (also with DATABASE_URL set): a copy of the run's
 * template, migrated once by the global setup with the real runMigrations (global-setup.ts). With
 * `{ migrate: false }` an empty, unmigrated one (a copy of template0), for tests of migrating itself.
 */
export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const adminUrl = inject("adminDatabaseUrl");
  const name = `gw_test_${randomBytes(6).toString("hex")}`;
  const template = options.migrate === false ? "template0" : inject("templateDatabase");
  await withAdmin(adminUrl, (c) => c.query(`create database ${name} template ${template}`));
  const url = databaseUrl(adminUrl, name);
  const pool = createPool(url, 10, () => {});
  return {
    url,
    pool,
    async drop() {
      await pool.end();
      await withAdmin(adminUrl, (c) => c.query(`drop database if exists ${name} with (force)`));
    },
  };
}
