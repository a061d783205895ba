import { randomBytes } from "node:crypto";
import { mkdtemp, chmod, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { TestProject } from "vitest/node";
import { startEmbeddedPostgres, type EmbeddedPostgres } from "../../src/db/embedded.js";
import { runMigrations } from "../../src/db/migrate.js";
import { createPool } from "../../src/db/pool.js";
import { createLogger } from "../../src/logger.js";
import { databaseUrl, withAdmin } from "./admin-db.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** A PostgreSQL URL with the right to CREATE DATABASE; each test file makes its own database there. */
    adminDatabaseUrl: string;
    /**
     * The name of this run's migrated template database on that server, which `createTestDatabase()` copies.
     * Nothing connects to it (it refuses connections): PostgreSQL copies a database only while nobody is in it.
     */
    templateDatabase: string;
  }
}

// Tests follow the gateway's own rule: DATABASE_URL selects an external PostgreSQL, else an embedded one.
export default async function setup(project: TestProject) {
  const external = process.env.DATABASE_URL;
  let adminUrl: string;
  let stopServer = async () => {};
  if (external) {
    adminUrl = external;
  } else {
    const dir = await mkdtemp(path.join(os.tmpdir(), "gateway-test-pg-"));
    await chmod(dir, 0o755);
    let pg: EmbeddedPostgres;
    try {
      pg = await startEmbeddedPostgres({ dataDir: dir, fastUnsafe: true, mode: "own" });
    } catch (err) {
      await rm(dir, { recursive: true, force: true });
      throw err;
    }
    adminUrl = pg.adminUrl;
    stopServer = async () => {
      await pg.stop();
      await rm(dir, { recursive: true, force: true });
    };
  }

  let template: string;
  try {
    template = await createTemplateDatabase(adminUrl);
  } catch (err) {
    await stopServer();
    throw err;
  }
  project.provide("adminDatabaseUrl", adminUrl);
  project.provide("templateDatabase", template);
  return async () => {
    // Also on an external server shared with other runs: each run drops the template it made, and only that one.
    try {
      await dropDatabase(adminUrl, template);
    } finally {
      await stopServer();
    }
  };
}

/**
 * Migrates one database per run with the real runMigrations (the per-file cost was a few hundred ms of migrations;
 * a copy is one CREATE DATABASE), under a name of its own so concurrent runs on one server never meet. Its pool is
 * closed before the tests start, and it then refuses connections, so no stray client can make the copies fail
 * ("source database is being accessed by other users"); copies running at the same time are fine.
 */
async function createTemplateDatabase(adminUrl: string): Promise<string> {
  const name = `gw_tmpl_${randomBytes(6).toString("hex")}`;
  // From template0, like an unmigrated test database: nobody can be connected to it (template1 may be in use).
  await withAdmin(adminUrl, (c) => c.query(`create database ${name} template template0`));
  try {
    const pool = createPool(databaseUrl(adminUrl, name), 2, () => {});
    try {
      await runMigrations(pool, createLogger("silent"));
    } finally {
      await pool.end();
    }
    await withAdmin(adminUrl, (c) => c.query(`alter database ${name} allow_connections false`));
  } catch (err) {
    await dropDatabase(adminUrl, name);
    throw err;
  }
  return name;
}

async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  await withAdmin(adminUrl, (c) => c.query(`drop database if exists ${name} with (force)`));
}
