import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answeredByServer } from "../../src/db/faults.js";
import { createPool, type Pool } from "../../src/db/pool.js";
import { inTransaction } from "../../src/db/transaction.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

// A connection whose transaction state is unknown never returns to the pool (src/db/transaction.ts). With a
// client-side statement timeout, node-postgres abandons a statement it stopped waiting for but leaves it running,
// and queues the ROLLBACK behind it: returned to the pool, that connection would carry its open transaction (and
// its locks) into whatever ran on it next.

let db: TestDatabase;
/**
 * A pool like the gateway's, with a short client-side statement timeout: its server-side limit comes 300 ms
 * before it, a margin a loaded machine's event loop keeps.
 */
let pool: Pool;
const QUERY_TIMEOUT_MS = 3_000;

beforeAll(async () => {
  db = await createTestDatabase();
  pool = createPool(db.url, 2, () => {}, { queryTimeoutMs: QUERY_TIMEOUT_MS });
  await db.pool.query("create table tx_probe (id int primary key, n int not null)");
  await db.pool.query("insert into tx_probe values (1, 0)");
});
afterAll(async () => {
  await pool?.end();
  await db?.drop();
});

/** Our pool's connections to the database that sit inside a transaction. */
async function openTransactions(): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>(
    `select count(*)::int as n from pg_stat_activity
     where datname = current_database() and pid <> pg_backend_pid() and state like 'idle in transaction%'`,
  );
  return rows[0]!.n;
}

const probe = async () => (await db.pool.query<{ n: number }>("select n from tx_probe where id = 1")).rows[0]!.n;

describe("inTransaction", () => {
  it("runs each statement under a server-side statement_timeout below the client's, so a slow one ends cleanly", async () => {
    const start = await probe();
    const other = await db.pool.connect();
    try {
      await other.query("begin");
      await other.query("update tx_probe set n = n + 1 where id = 1");
      // Blocked on the row lock: the server cancels it (57014) before the client gives up on it.
      const err = await inTransaction(pool, (client) => client.query("update tx_probe set n = n + 10 where id = 1")).catch(
        (e: unknown) => e,
      );
      expect((err as { code?: string }).code).toBe("57014");
      expect(answeredByServer(err)).toBe(true);
    } finally {
      await other.query("rollback");
      other.release();
    }
    // The connection went back to the pool clean: the next transaction on it commits its own work only.
    await inTransaction(pool, (client) => client.query("update tx_probe set n = n + 100 where id = 1"));
    expect(await probe()).toBe(start + 100);
    expect(await openTransactions()).toBe(0);
  });

  it("destroys a connection whose statement the client abandoned instead of returning it inside its transaction", async () => {
    const start = await probe();
    const before = await pool.query<{ pid: number }>("select pg_backend_pid() as pid");
    const err = await inTransaction(pool, async (client) => {
      await client.query("update tx_probe set n = n + 1000 where id = 1");
      // No server-side limit for this one: only the client's timeout ends the wait.
      await client.query("set local statement_timeout = 0");
      await client.query(`select pg_sleep(${(QUERY_TIMEOUT_MS * 2) / 1000})`);
    }).catch((e: unknown) => e);
    expect(String((err as Error).message)).toMatch(/Query read timeout/);
    expect(answeredByServer(err)).toBe(false);
    // Every connection handed out now starts outside any transaction, and the abandoned one's update never commits.
    for (let i = 0; i < 4; i++) {
      const { rows } = await pool.query<{ tx: string | null }>("select txid_current_if_assigned()::text as tx");
      expect(rows[0]!.tx).toBeNull();
    }
    await expect.poll(openTransactions, { timeout: 15_000, interval: 100 }).toBe(0);
    // The abandoned statement runs on in its session until its sleep ends; then its transaction is gone, uncommitted.
    const sleeping = async () =>
      (
        await db.pool.query<{ n: number }>(
          "select count(*)::int as n from pg_stat_activity where datname = current_database() and query like 'select pg_sleep%'",
        )
      ).rows[0]!.n;
    await expect.poll(sleeping, { timeout: 15_000, interval: 100 }).toBe(0);
    expect(await probe()).toBe(start);
    expect(before.rows[0]!.pid).toBeGreaterThan(0);
  });

  it("rolls back a transaction whose work threw an error of its own and keeps the connection", async () => {
    const start = await probe();
    const pids = new Set<number>();
    for (let i = 0; i < 3; i++) {
      await inTransaction(pool, async (client) => {
        pids.add((await client.query<{ pid: number }>("select pg_backend_pid() as pid")).rows[0]!.pid);
        await client.query("update tx_probe set n = n + 1 where id = 1");
        throw new Error("a rule refused it");
      }).catch(() => {});
    }
    expect(await probe()).toBe(start);
    // At most the pool's two connections served the three: none was destroyed for an ordinary error.
    expect(pids.size).toBeLessThanOrEqual(2);
    expect(await openTransactions()).toBe(0);
  });
});
