import { GatewayError } from "../errors.js";

// Which database errors are transient: the database, or the road to it, failed, and the same statement may
// succeed on a fresh connection in a moment (docs/architecture.md, "Database faults"). Everything else is an
// answer: a constraint, a data error, a bug in a statement; repeating it would fail the same way.

/** SQLSTATEs that say nothing about the statement: connection exceptions, shutdowns, overload, lost races. */
const TRANSIENT_STATES = /^(08|57P0[123]|53300|40001|40P01)/;
/** Socket errors of a dead or unreachable server, and of a connection cut in the middle. */
const TRANSIENT_ERRNOS = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN", "ENOTFOUND", "ECONNABORTED"]);
/** What node-postgres and its pool say, without a code, when a connection ends, times out or is unusable. */
const TRANSIENT_MESSAGES = /Connection terminated|connection timeout|timeout exceeded when trying to connect|Query read timeout|not queryable|Connection closed|Client was closed/i;

export function isTransientDbError(err: unknown): boolean {
  if (err === null || typeof err !== "object") return false;
  if (err instanceof DatabaseUnavailableError) return true;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && (TRANSIENT_STATES.test(code) || TRANSIENT_ERRNOS.has(code))) return true;
  const message = (err as { message?: unknown }).message;
  return typeof message === "string" && TRANSIENT_MESSAGES.test(message);
}

/** SQLSTATE classes 22 (data exception) and 23 (constraint violation): the same statement would fail again. */
export function isDataError(err: unknown): boolean {
  return typeof err === "object" && err !== null && /^2[23]/.test(String((err as { code?: unknown }).code));
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
 * deadline is the same 503, never a 500.
 */
export async function withinDeadline<T>(ms: number, step: () => Promise<T>): Promise<T> {
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
    throw isTransientDbError(err) ? new DatabaseUnavailableError() : err;
  } finally {
    clearTimeout(timer);
  }
}

/** An idempotent read retried once on a fresh connection when its pooled connection turned out dead. */
export async function readRetryingOnce<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (!isTransientDbError(err)) throw err;
    return read();
  }
}
