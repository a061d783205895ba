import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, warmPool } from "../../src/db/pool.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

// A start opens the connections its first burst will need before it listens (src/runtime/gateway.ts), and a
// database it cannot reach yet does not fail that start.

describe("warmPool", () => {
  let db: TestDatabase;
  beforeAll(async () => void (db = await createTestDatabase({ migrate: false })));
  afterAll(() => db.drop());

  it("opens the connections and leaves them idle in the pool, never more than its size", async () => {
    const pool = createPool(db.url, 4, () => {});
    try {
      expect(await warmPool(pool, 6)).toBe(4);
      expect({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }).toEqual({ total: 4, idle: 4, waiting: 0 });
      // Each one works: four statements at once take the four warm connections, none opened anew.
      const pids = await Promise.all(
        [1, 2, 3, 4].map(async () => (await pool.query<{ pid: number }>("select pg_backend_pid() as pid, pg_sleep(0.05)")).rows[0]!.pid),
      );
      expect(new Set(pids).size).toBe(4);
      expect(pool.totalCount).toBe(4);
    } finally {
      await pool.end();
    }
  });

  it("counts nothing and throws nothing when the database cannot be reached", async () => {
    const pool = createPool("postgres://postgres@127.0.0.1:1/none", 3, () => {}, { connectTimeoutMs: 2_000 });
    try {
      expect(await warmPool(pool, 3)).toBe(0);
      expect(pool.totalCount).toBe(0);
    } finally {
      await pool.end();
    }
  });
});
