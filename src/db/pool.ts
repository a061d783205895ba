import pg from "pg";

// bigint (int8) and numeric come back as strings by default: keep it that way so quota and money never pass
// through a JS float. Callers convert with BigInt() where they need arithmetic.

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

/**
 * A statement with its own answer timeout (node-postgres reads `query_timeout` per query): past it the statement
 * is abandoned on this side and its connection dropped, so a stalled network is noticed. Only statements that
 * are retried (the ledger's, the heartbeat, the request log's) get one: a migration may take as long as it takes.
 */
export type TimedQuery = pg.QueryConfig & { query_timeout?: number };

export function createPool(url: string, max: number, onError: (err: Error) => void, timeouts: { connectTimeoutMs?: number } = {}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    idleTimeoutMillis: 30_000,
    // Opening a connection, or waiting for a free one.
    connectionTimeoutMillis: timeouts.connectTimeoutMs ?? 10_000,
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
