import pg from "pg";

// bigint (int8) and numeric come back as strings by default: keep it that way so quota and money never pass
// through a JS float. Callers convert with BigInt() where they need arithmetic.

export type Pool = pg.Pool;

/** Where a statement runs: the pool (a statement of its own), or a transaction's client (it commits with the transaction). */
export type Queryable = Pick<pg.Pool | pg.PoolClient, "query">;

/**
 * A statement with its own answer timeout (node-postgres reads `query_timeout` per query): past it the statement
 * is abandoned on this side and its connection dropped, so a stalled network is noticed.
 */
export type TimedQuery = pg.QueryConfig & { query_timeout?: number };

export interface PoolTimeouts {
  /** Opening a connection, or waiting for a free one. */
  connectTimeoutMs?: number;
  /**
   * Every statement's answer timeout (a stalled network answers nothing): past it the statement is abandoned on
   * this side, its connection dropped, and the request answered 503. Migrations run on a connection without it
   * (migrationConnection): they may take as long as they take.
   */
  queryTimeoutMs?: number;
}

export function createPool(url: string, max: number, onError: (err: Error) => void, timeouts: PoolTimeouts = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: timeouts.connectTimeoutMs ?? 10_000,
    query_timeout: timeouts.queryTimeoutMs,
    // A peer that vanished without a FIN (a failover, a partition) is noticed by the kernel, not never.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  // A client losing its connection (database restart) must not crash the process: idle ones are reported on the
  // pool, checked-out ones on the client itself.
  pool.on("error", onError);
  pool.on("connect", (client) => client.on("error", onError));
  return pool;
}

/** A connection like the pool's, without its statement timeout (the migrations'). */
export function migrationConnection(pool: pg.Pool): pg.Client {
  const client = new pg.Client({ ...pool.options, query_timeout: undefined });
  client.on("error", () => {});
  return client;
}

/**
 * Opens up to `count` connections at once and returns them to the pool idle, so that the first burst of traffic
 * after a start does not wait for connections (each a process forked by PostgreSQL and a SCRAM exchange) while it
 * queues. A connection that cannot be opened now is left for the pool to open later: warming never fails a start.
 */
export async function warmPool(pool: pg.Pool, count: number): Promise<number> {
  const opened = await Promise.allSettled(Array.from({ length: count }, () => pool.connect()));
  let warm = 0;
  for (const result of opened) {
    if (result.status !== "fulfilled") continue;
    result.value.release();
    warm++;
  }
  return warm;
}
