import pg from "pg";

// bigint (int8) and numeric come back as strings by default: keep it that way so quota and money never pass
// through a JS float. Callers convert with BigInt() where they need arithmetic.

export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

export function createPool(url: string, max: number, onError: (err: Error) => void): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, idleTimeoutMillis: 30_000, connectionTimeoutMillis: 10_000 });
  // A client losing its connection (database restart) must not crash the process: idle ones are reported on the
  // pool, checked-out ones on the client itself.
  pool.on("error", onError);
  pool.on("connect", (client) => client.on("error", onError));
  return pool;
}
