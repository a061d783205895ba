import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import path from "node:path";
import { migrationsFolder, runMigrations } from "../../src/db/migrate.js";
import { createPool } from "../../src/db/pool.js";
import { createLogger } from "../../src/logger.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

// runMigrations, the one migration entry point (serve, admin commands, `gateway migrate`, tests), also brings
// graphile-worker's schema up, so a process that never runs the worker can enqueue a job inside its own
// business transaction on a fresh database.

describe("runMigrations and graphile-worker's schema", () => {
  let db: TestDatabase;
  const logger = createLogger("silent");
  const workerSchema = async () =>
    (await db.pool.query("select to_regnamespace('graphile_worker') is not null as present")).rows[0].present;

  beforeAll(async () => {
    db = await createTestDatabase({ migrate: false });
  });
  afterAll(() => db?.drop());

  it("a fresh database has no worker schema until runMigrations, and none of the worker's rows after it", async () => {
    expect(await workerSchema()).toBe(false);
    await runMigrations(db.pool, logger);
    expect(await workerSchema()).toBe(true);
    // No worker ever ran here: no schedule registered (a running worker records its crontab), nothing queued.
    const sql =
      "select (select count(*)::int from graphile_worker.jobs) as jobs, (select count(*)::int from graphile_worker._private_known_crontabs) as crontabs";
    expect((await db.pool.query(sql)).rows[0]).toEqual({ jobs: 0, crontabs: 0 });
  });

  it("lets a transaction enqueue a job with its own writes: both commit, or neither", async () => {
    const enqueue = async (outcome: "commit" | "rollback", email: string) => {
      const client = await db.pool.connect();
      try {
        await client.query("begin");
        await client.query("insert into users (email, password_hash, plan) values ($1, 'x', 'free')", [email]);
        const job = await client.query("select (graphile_worker.add_job('prune_auth', '{}'::json)).id");
        expect(job.rows[0].id).toEqual(expect.any(String));
        await client.query(outcome);
      } finally {
        client.release();
      }
    };
    await enqueue("rollback", "rolled-back@example.test");
    await enqueue("commit", "committed@example.test");
    const jobs = await db.pool.query("select task_identifier from graphile_worker.jobs");
    expect(jobs.rows).toEqual([{ task_identifier: "prune_auth" }]);
    const users = await db.pool.query("select email from users");
    expect(users.rows).toEqual([{ email: "committed@example.test" }]);
  });

  it("is idempotent, also when several processes start together on a fresh database", async () => {
    await runMigrations(db.pool, logger);
    const fresh = await createTestDatabase({ migrate: false });
    const pools = [1, 2, 3].map(() => createPool(fresh.url, 1, () => {}));
    try {
      await Promise.all(pools.map((pool) => runMigrations(pool, logger)));
      const { rows } = await fresh.pool.query("select (graphile_worker.add_job('expire_ledger')).id is not null as queued");
      expect(rows).toEqual([{ queued: true }]);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
      await fresh.drop();
    }
  });

  it("migration 0012 removes what the renamed cron tasks' old names had queued, and nothing else", async () => {
    const fresh = await createTestDatabase();
    try {
      const add = (task: string) => fresh.pool.query("select graphile_worker.add_job($1, '{}'::json, job_key := $1)", [task]);
      for (const task of ["prune_sessions", "expire_holds", "prune_auth", "ledger_retention"]) await add(task);
      await fresh.pool.query(readFileSync(path.join(migrationsFolder, "0012_renamed_cron_jobs.sql"), "utf8"));
      const { rows } = await fresh.pool.query("select task_identifier from graphile_worker.jobs order by task_identifier");
      expect(rows.map((r: { task_identifier: string }) => r.task_identifier)).toEqual(["ledger_retention", "prune_auth"]);
    } finally {
      await fresh.drop();
    }
  });
});
