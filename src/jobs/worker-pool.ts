import { RETRYABLE_ERROR_CODES } from "graphile-worker/dist/lib.js";
import type pg from "pg";
import { isTransientDbError } from "../db/faults.js";

// graphile-worker (0.17.3, and 0.18 the same) completes and fails a job without awaiting it (worker.js): a
// statement that fails there is an unhandled rejection, which ends the process. Its own retries take only the
// error codes listed in its RETRYABLE_ERROR_CODES (serialization failures, 57P03, two socket errors), so a
// connection cut at that moment (57P01 from pg_terminate_backend, a failover's reset, a read-only standby's 25006)
// killed a serving process. The worker is given the pool through this view: a transient fault it meets
// (src/db/faults.ts) carries a code, 08006 (connection_failure) when the driver gave none, and every such code
// is registered with its retries, which then wait it out like any other. Its statements are safe to run again:
// completing or failing a job checks that this worker still holds the job's lock.

/** connection_failure: the code a transient fault without one gets. */
const CONNECTION_FAILURE = "08006";
/** The retries' pauses for a transient fault: from 200 ms, growing by half each time, up to 10 s. */
const TRANSIENT_BACKOFF = { minDelay: 200, maxDelay: 10_000 };

/** The error, made retryable by graphile-worker when it is a transient database fault. */
function retryable(error: unknown): unknown {
  if (!isTransientDbError(error) || typeof error !== "object" || error === null) return error;
  const err = error as { code?: unknown };
  if (typeof err.code !== "string") err.code = CONNECTION_FAILURE;
  RETRYABLE_ERROR_CODES[err.code as string] ??= TRANSIENT_BACKOFF;
  return error;
}

/** A query's result, with a rejection made retryable (a callback-style call or a submittable passes as it is). */
function passing<T>(result: T): T {
  if (result instanceof Promise) {
    return result.catch((err: unknown) => {
      throw retryable(err);
    }) as T;
  }
  return result;
}

/** A view of `target` whose own functions run bound to it, with `overrides` in place of some. */
function view<T extends object>(target: T, overrides: Partial<Record<keyof T, unknown>>): T {
  return new Proxy(target, {
    get(obj, prop) {
      if (Object.hasOwn(overrides, prop)) return overrides[prop as keyof T];
      const value: unknown = Reflect.get(obj, prop, obj);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(obj) : value;
    },
  });
}

/** `target.query(...args)`, looked up at the call (a test may wrap a client's query meanwhile). */
const queryOn =
  (target: pg.Pool | pg.PoolClient) =>
  (...args: unknown[]) =>
    passing(Reflect.apply(target.query, target, args) as unknown);

function clientView(client: pg.PoolClient): pg.PoolClient {
  return view(client, { query: queryOn(client) });
}

/** The pool as graphile-worker gets it: the same connections, its transient faults retryable by the worker. */
export function workerPool(pool: pg.Pool): pg.Pool {
  type ConnectCallback = (err: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void;
  return view(pool, {
    query: queryOn(pool),
    connect: (callback?: ConnectCallback) => {
      if (callback) {
        return pool.connect((err, client, done) =>
          callback(err ? (retryable(err) as Error) : undefined, client ? clientView(client) : undefined, done),
        );
      }
      return pool.connect().then(clientView, (err: unknown) => {
        throw retryable(err);
      });
    },
  });
}
