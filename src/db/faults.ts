import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { GatewayError } from "../errors.js";
import { backoffMs, type Backoff } from "./backoff.js";
import type { Pool } from "./pool.js";

// Which database errors are transient: judged by what a retry can change (docs/architecture.md, "Database faults").
// The database, or the road to it, is in a state that passes (a failover, a restart, a timeout, a lock held by a
// migration, a full disk or memory), and the same statement may succeed in a moment. Everything else is an
// answer tied to the statement or its payload (a constraint, a data error, a bug in a statement): repeating it
// would fail the same way.

/**
 * SQLSTATEs a retry can outlive: connection exceptions (08), a read-only transaction (25006: a failover pointed
 * the connection at a standby) and an idle session ended by the server (25P03, 57P05), serialization failures and
 * deadlocks (40001, 40P01), insufficient resources (53: disk full, out of memory, too many connections), a lock
 * timeout (55P03: a migration's lock_timeout), a cancelled statement (57014: statement_timeout or
 * pg_cancel_backend; the gateway never cancels a statement of its own), shutdowns (57P01-57P03) and system or I/O
 * errors (58000, 58030).
 */
const TRANSIENT_STATES = /^(08|25006|25P03|40001|40P01|53|55P03|57014|57P0[1235]|58000|58030)/;
/** Socket errors of a dead or unreachable server, and of a connection cut in the middle. */
const TRANSIENT_ERRNOS = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ENOTFOUND",
  "ECONNABORTED",
]);
/** What node-postgres and its pool say, without a code, when a connection ends, times out or is unusable. */
const TRANSIENT_MESSAGES =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout|not queryable|Connection closed|Client was closed/i;

/**
 * The driver's error under the wrappers around it (drizzle's DrizzleQueryError carries the pg error as its
 * `cause`): the one that has a code, or the innermost.
 */
function driverError(err: unknown): unknown {
  let current = err;
  for (let depth = 0; depth < 5; depth++) {
    if (current === null || typeof current !== "object" || (current as { code?: unknown }).code !== undefined) return current;
    const cause = (current as { cause?: unknown }).cause;
    if (cause === undefined) return current;
    current = cause;
  }
  return current;
}

export function isTransientDbError(error: unknown): boolean {
  const err = driverError(error);
  if (err === null || typeof err !== "object") return false;
  if (err instanceof DatabaseUnavailableError) return true;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && (TRANSIENT_STATES.test(code) || TRANSIENT_ERRNOS.has(code))) return true;
  const message = (err as { message?: unknown }).message;
  return typeof message === "string" && TRANSIENT_MESSAGES.test(message);
}

/** What a log line may say of a database error: its code, never its message (which can quote a statement's parameters). */
export function faultCode(error: unknown): string {
  const err = driverError(error) as { code?: unknown; name?: unknown } | null;
  return String(err?.code ?? err?.name ?? "unknown");
}

/**
 * Whether the database itself answered the statement with an error, so that it certainly did not commit (a single
 * statement outside a transaction is rolled back by the error). Anything else (a cut connection, a statement
 * abandoned by the client-side timeout) leaves the outcome unknown: the statement may have committed.
 */
export function answeredByServer(error: unknown): boolean {
  return driverError(error) instanceof pg.DatabaseError;
}

/** node-postgres refusing a statement on a connection it already knows is dead: the statement was never sent. */
const NOT_SENT_MESSAGES = /not queryable/i;

/**
 * Whether a failed statement certainly did not commit: the server answered it with an error, or it was never sent
 * (the connection was known dead). Otherwise its outcome is unknown.
 */
export function certainlyNotCommitted(error: unknown): boolean {
  if (answeredByServer(error)) return true;
  const message = (driverError(error) as { message?: unknown } | null)?.message;
  return typeof message === "string" && NOT_SENT_MESSAGES.test(message);
}

/** SQLSTATE classes 22 (data exception) and 23 (constraint violation): the same statement would fail again. */
export function isDataError(error: unknown): boolean {
  const err = driverError(error);
  return typeof err === "object" && err !== null && /^2[23]/.test(String((err as { code?: unknown }).code));
}

/** The error as a client is answered it: a transient database fault (not already a typed error) is 503 database_unavailable. */
export function answeredAs(err: unknown): unknown {
  return isTransientDbError(err) && !(err instanceof GatewayError) ? new DatabaseUnavailableError() : err;
}

/** The client's answer when a request needs the database and the database did not answer in time. */
export class DatabaseUnavailableError extends GatewayError {
  constructor(retryAfterSeconds = 2) {
    super({
      code: "database_unavailable",
      message: "The gateway's database is not answering right now; retry shortly with backoff. Nothing was charged.",
      headers: { "Retry-After": String(retryAfterSeconds) },
    });
  }
}

/**
 * Runs a database step of a request under a deadline: past `ms`, the request gets 503 database_unavailable
 * (the step goes on in the background; each such step is a read or idempotent). A transient failure within the
 * deadline is the same 503, never a 500. `onFault` hears of both (a stalled database fails no statement).
 */
export async function withinDeadline<T>(ms: number, step: () => Promise<T>, onFault?: (err: unknown) => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DatabaseUnavailableError()), ms);
  });
  const running = step();
  // A step that fails after the deadline must not become an unhandled rejection.
  running.catch(() => {});
  try {
    return await Promise.race([running, timeout]);
  } catch (err) {
    if (!isTransientDbError(err)) throw err;
    onFault?.(err);
    throw err instanceof DatabaseUnavailableError ? err : new DatabaseUnavailableError();
  } finally {
    clearTimeout(timer);
  }
}

/** The pauses between attempts of a request's read. */
const READ_RETRY: Backoff = { firstMs: 5, maxMs: 200 };

/**
 * An idempotent read of a request, under the request's deadline, retried on a transient fault after a short
 * pause that doubles, until the deadline. Not at once: a cut (a failover, a pooler restart) kills every pooled
 * connection together, and the pool learns that an idle one is dead only once its socket's error is read, so an
 * immediate retry tends to take the next dead connection.
 */
export function readWithinDeadline<T>(ms: number, read: () => Promise<T>, onFault?: (err: unknown) => void): Promise<T> {
  const deadline = performance.now() + ms;
  return withinDeadline(
    ms,
    async () => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await read();
        } catch (err) {
          const pause = backoffMs(attempt, READ_RETRY);
          // No attempt starts at or after the deadline (the request has its 503 by then), also when the pause
          // overran it on a busy event loop.
          if (!isTransientDbError(err) || performance.now() + pause >= deadline) throw err;
          await sleep(pause);
          if (performance.now() >= deadline) throw err;
        }
      }
    },
    onFault,
  );
}

/** Runs a request's idempotent read under the request's deadline (readWithinDeadline, bound once). */
export type RequestRead = <T>(read: () => Promise<T>) => Promise<T>;

export function requestRead(ms: number, onFault?: (err: unknown) => void): RequestRead {
  return (read) => readWithinDeadline(ms, read, onFault);
}

/**
 * Waits until the database answers, retrying transient faults with capped backoff for at most `timeoutMs`
 * (a process restarted during an outage starts once it is over instead of exiting). `onWaiting` is called once,
 * at the first failure. A definitive error (a wrong password, a missing database) is thrown at once.
 */
export async function waitForDatabase(pool: Pool, opts: { timeoutMs: number; onWaiting(err: unknown): void }): Promise<void> {
  const deadline = performance.now() + opts.timeoutMs;
  for (let attempt = 0; ; attempt++) {
    try {
      await pool.query("select 1");
      return;
    } catch (err) {
      if (!isTransientDbError(err) || performance.now() >= deadline) throw err;
      if (attempt === 0) opts.onWaiting(err);
      await sleep(Math.min(backoffMs(attempt, { firstMs: 100, maxMs: 2_000 }), Math.max(0, deadline - performance.now())));
    }
  }
}
