import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { backoffMs, type Backoff } from "../db/backoff.js";
import { faultCode, isDataError, isTransientDbError } from "../db/faults.js";
import type { DatabaseHealth } from "../db/health.js";
import type { Pool, TimedQuery } from "../db/pool.js";
import { batchParameter, encodeRow, INSERT_ROWS } from "./row-json.js";
import type { RequestLogWriter } from "./types.js";

export interface RequestLogWriterOptions {
  pool: Pool;
  logger: Logger;
  /** Rows per INSERT; a flush starts early once this many are buffered. */
  batchSize: number;
  flushIntervalMs: number;
  /** Rows held in memory at most (besides the batch in flight); more are dropped and counted. */
  maxBuffered: number;
  /** A batch whose answer takes longer is abandoned and retried (it is idempotent by request id). */
  statementTimeoutMs?: number;
  /** Transient failures are reported here, once per outage, instead of a warning per failed flush. */
  health?: DatabaseHealth;
  /** close() keeps retrying a database that does not answer for this long before it drops what is left. */
  closeGraceMs?: number;
}

const DROP_WARN_INTERVAL_MS = 10_000;
const CLOSE_GRACE_MS = 700;
const CLOSE_BACKOFF: Backoff = { firstMs: 100, maxMs: 2_000 };

/**
 * Buffered request-log writer (docs/architecture.md, "Rules": batch log writes, keep per-request database work to the
 * reservation). write() encodes the row and pushes it onto an array; batches go out on a timer or when a batch
 * fills up.
 */
export function createRequestLogWriter(opts: RequestLogWriterOptions): RequestLogWriter {
  const { pool, logger, flushIntervalMs, maxBuffered } = opts;
  // A batch of 0 would never drain the buffer.
  const batchSize = Math.max(1, opts.batchSize);
  const log = logger.child({ component: "request-log-writer" });
  let buffer: string[] = [];
  let inFlight = 0;
  let written = 0;
  let dropped = 0;
  let failedFlushes = 0;
  let droppedSinceWarn = 0;
  let lastDropWarn = 0;
  let lastDropReason = "";
  let closed = false;
  // After a failed flush only the timer retries, so a full buffer against a down database is not a retry loop.
  let failing = false;
  let running: Promise<void> | null = null;
  let queued: Promise<void> | null = null;

  function drop(count: number, reason: string) {
    dropped += count;
    droppedSinceWarn += count;
    lastDropReason = reason;
    warnDropped();
  }

  /** At most one warning per interval, carrying every drop since the last one. */
  function warnDropped(force = false) {
    const now = Date.now();
    if (droppedSinceWarn === 0 || (!force && now - lastDropWarn < DROP_WARN_INTERVAL_MS)) return;
    log.warn({ dropped: droppedSinceWarn, dropped_total: dropped, last_reason: lastDropReason }, "request log rows dropped");
    droppedSinceWarn = 0;
    lastDropWarn = now;
  }

  async function insert(rows: string[]): Promise<boolean> {
    const count = rows.length;
    try {
      const query: TimedQuery = {
        name: "request_logs_insert",
        text: INSERT_ROWS,
        values: [batchParameter(rows)],
        query_timeout: opts.statementTimeoutMs,
      };
      await pool.query(query);
      written += count;
      opts.health?.ok();
      return true;
    } catch (err) {
      failedFlushes++;
      // A driver error's message can quote the offending value; the SQLSTATE (or errno) is enough to act on.
      if (opts.health && isTransientDbError(err)) opts.health.failed(err, "request log");
      else log.warn({ code: faultCode(err), rows: count, failed_flushes: failedFlushes }, "request log flush failed");
      // The same batch would fail again: it is dropped (and counted), not retried for ever.
      if (isDataError(err)) {
        drop(count, "batch rejected by the database");
        return true;
      }
      return false;
    }
  }

  /** Writes the rows buffered when it starts, batch by batch; a failed batch returns to the front. */
  async function drain(): Promise<void> {
    let remaining = buffer.length;
    while (remaining > 0) {
      const batch = buffer.splice(0, Math.min(batchSize, remaining));
      remaining -= batch.length;
      inFlight = batch.length;
      const ok = await insert(batch);
      inFlight = 0;
      if (!ok) {
        buffer = batch.concat(buffer);
        const excess = buffer.length - maxBuffered;
        if (excess > 0) {
          buffer.splice(0, excess);
          drop(excess, "buffer full while the database is failing");
        }
        failing = true;
        return;
      }
      failing = false;
    }
  }

  function run(): Promise<void> {
    const current = drain()
      .catch((err: unknown) => log.error({ err }, "request log writer failed"))
      .finally(() => {
        running = null;
        if (!failing && !closed && buffer.length >= batchSize) start();
      });
    running = current;
    return current;
  }

  function start() {
    if (!running) void run();
  }

  function flush(): Promise<void> {
    if (!running) return run();
    // Callers wait for the flush in progress and then one more, shared by everyone who asked meanwhile.
    queued ??= running.then(() => {
      queued = null;
      // The finished flush may already have started the next one; flush() waits for it rather than racing it.
      return flush();
    });
    return queued;
  }

  const timer = setInterval(() => {
    warnDropped();
    if (buffer.length > 0) start();
  }, flushIntervalMs);
  timer.unref();

  let closing: Promise<void> | null = null;
  async function shutdown() {
    clearInterval(timer);
    await flush();
    const giveUpAt = performance.now() + (opts.closeGraceMs ?? CLOSE_GRACE_MS);
    for (let attempt = 1; buffer.length > 0 && performance.now() < giveUpAt; attempt++) {
      await sleep(Math.min(backoffMs(attempt - 1, CLOSE_BACKOFF), Math.max(0, giveUpAt - performance.now())));
      await flush();
    }
    if (buffer.length > 0) {
      const lost = buffer.length;
      buffer = [];
      drop(lost, "database unavailable at shutdown");
    }
    warnDropped(true);
  }

  return {
    write(row) {
      if (closed) return drop(1, "writer closed");
      if (buffer.length >= maxBuffered) return drop(1, "buffer full");
      let encoded: string | null;
      try {
        encoded = encodeRow(row);
      } catch {
        // A row that breaks the RequestLogRow contract at run time (a caller's bug) must not break write().
        encoded = null;
      }
      if (encoded === null) return drop(1, "invalid row");
      buffer.push(encoded);
      if (buffer.length >= batchSize && !failing) start();
    },
    flush,
    close() {
      closed = true;
      closing ??= shutdown();
      return closing;
    },
    stats: () => ({ written, dropped, failedFlushes, buffered: buffer.length + inFlight }),
  };
}
