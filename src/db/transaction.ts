import { drizzle, type NodePgDatabase } from "drizzle-orm/node-postgres";
import type pg from "pg";
import { answeredByServer, isTransientDbError } from "./faults.js";
import type { Pool } from "./pool.js";

/**
 * The share of the pool's client-side statement timeout (`database.query_timeout_ms`) given to a transaction's
 * statements on the server (`SET LOCAL statement_timeout`): the server cancels a slow statement first, with an
 * answer (57014), so the transaction ends cleanly and its connection stays usable; the client-side timeout, a
 * little later, is for a network that stalled.
 */
const SERVER_SHARE = 0.9;

const asError = (err: unknown) => (err instanceof Error ? err : new Error(String(err)));

/**
 * Runs `work` in one transaction on one connection: committed if it returns, rolled back if it throws.
 *
 * A connection whose transaction state is unknown never returns to the pool (docs/architecture.md, "Database
 * faults"): when a statement, the COMMIT or the ROLLBACK failed without the server's answer (a cut connection, a
 * statement the client-side timeout abandoned, which node-postgres leaves running and queues the ROLLBACK behind),
 * the client is destroyed. Otherwise the next user of that connection would run inside this open transaction,
 * holding its locks, until something rolled it back. A COMMIT whose outcome is unknown is thrown as the transient
 * error it is: whoever retries must do so with the operation's idempotency (the same id or key), never as a new
 * operation.
 */
export async function inTransaction<T>(pool: Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  return transactionOn(pool, client, work);
}

/**
 * inTransaction on a connection the caller took from `pool` (so that it knows a failure to connect from a failure
 * of the transaction: nothing was sent then); the connection is released, or destroyed, here.
 */
export async function transactionOn<T>(pool: Pool, client: pg.PoolClient, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  let broken: Error | undefined;
  try {
    await client.query("begin");
    const timeoutMs = (pool.options as { query_timeout?: number }).query_timeout;
    if (timeoutMs) await client.query(`set local statement_timeout = ${Math.max(1, Math.floor(timeoutMs * SERVER_SHARE))}`);
    const result = await work(client);
    await client.query("commit");
    return result;
  } catch (err) {
    // The connection failed under a statement (no answer from the server): its state is unknown.
    if (isTransientDbError(err) && !answeredByServer(err)) broken = asError(err);
    else {
      try {
        await client.query("rollback");
      } catch (rollbackErr) {
        broken = asError(rollbackErr);
      }
    }
    throw err;
  } finally {
    // release(err) destroys the connection instead of returning it.
    client.release(broken);
  }
}

/** A transaction for drizzle code, on inTransaction: drizzle's own `db.transaction` returns a connection to the pool when its ROLLBACK fails. */
export type DrizzleTransaction = <T>(work: (tx: NodePgDatabase) => Promise<T>) => Promise<T>;

export const drizzleTransactions =
  (pool: Pool): DrizzleTransaction =>
  (work) =>
    inTransaction(pool, (client) => work(drizzle(client)));
