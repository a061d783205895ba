import { Logger, quickAddJob, run, type Runner } from "graphile-worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, type Pool } from "../../src/db/pool.js";
import { workerPool } from "../../src/jobs/worker-pool.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { injectAtPool } from "../helpers/sql-faults.js";

// graphile-worker completes and fails a job without awaiting it: a database fault at that moment was an unhandled
// rejection, which ends a serving process (found by the crash test: 57P01 from a cut). Through workerPool
// (src/jobs/worker-pool.ts) every transient fault is one its retries wait out. Were it not, the rejection would
// fail this run.

let db: TestDatabase;
/** The worker's own pool, so that the faults reach only its statements. */
let pool: Pool;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, 4, () => {});
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

describe("the background worker under database faults", () => {
  it.each([
    { code: "57P01", fault: "a terminated connection (57P01)" },
    { code: "25006", fault: "a read-only standby after a failover (25006)" },
    { code: null, fault: "a connection lost without a SQLSTATE" },
  ])("completes and fails jobs through $fault", { timeout: 60_000 }, async ({ code }) => {
    let runs = 0;
    const runner: Runner = await run({
      pgPool: workerPool(pool),
      concurrency: 1,
      noHandleSignals: true,
      pollInterval: 200,
      taskList: {
        ok: async () => {
          runs++;
        },
        broken: async () => {
          runs++;
          throw new Error("the task failed");
        },
      },
      logger: new Logger(() => () => {}),
    });
    try {
      // The first two completions and the first two failures are refused: the worker waits it out, and the process
      // lives. Counted, not timed: a loaded machine may run the jobs late.
      const refusals: Record<string, number> = {};
      const fault = injectAtPool(pool, {
        code,
        forMs: 60_000,
        times: 4,
        when: (s) => {
          const name = /^(complete_job|fail_job)/.exec(s.name ?? "")?.[1];
          if (!name || (refusals[name] ?? 0) >= 2) return false;
          refusals[name] = (refusals[name] ?? 0) + 1;
          return true;
        },
      });
      await fault.applied;
      await quickAddJob({ pgPool: db.pool }, "ok", {});
      await quickAddJob({ pgPool: db.pool }, "broken", {}, { maxAttempts: 1 });
      await expect.poll(() => runs, { timeout: 15_000 }).toBe(2);
      await fault.over;
      expect(refusals).toEqual({ complete_job: 2, fail_job: 2 });
      // The completed job is gone; the failed one stays, failed for good, its lock released.
      const jobs = async () =>
        (await db.pool.query("select task_identifier, attempts, locked_by, last_error from graphile_worker.jobs")).rows;
      await expect
        .poll(jobs, { timeout: 30_000, interval: 100 })
        .toEqual([{ task_identifier: "broken", attempts: 1, locked_by: null, last_error: "the task failed" }]);
    } finally {
      await runner.stop();
      await db.pool.query("delete from graphile_worker._private_jobs");
    }
  });
});
