import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { backoffMs, type Backoff } from "../db/backoff.js";
import { answeredByServer, faultCode, isDataError, isTransientDbError } from "../db/faults.js";
import type { DatabaseHealth } from "../db/health.js";
import type { Pool } from "../db/pool.js";
import { insertBatch } from "./insert-batch.js";
import { encodeRow } from "./row-json.js";
import type { RequestLogRow, RequestLogStats, RequestLogWriter } from "./types.js";

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
class BatchedRequestLogWriter implements RequestLogWriter {
  private readonly batchSize: number;
  private readonly maxBuffered: number;
  private readonly log: Logger;
  private readonly timer: NodeJS.Timeout;
  private buffer: string[] = [];
  private inFlight = 0;
  private written = 0;
  private dropped = 0;
  private failedFlushes = 0;
  private droppedSinceWarn = 0;
  private lastDropWarn = 0;
  private lastDropReason = "";
  private closed = false;
  // After a failed flush only the timer retries, so a full buffer against a down database is not a retry loop.
  private failing = false;
  private running: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  private closing: Promise<void> | null = null;

  constructor(private readonly opts: RequestLogWriterOptions) {
    // A batch of 0 would never drain the buffer.
    this.batchSize = Math.max(1, opts.batchSize);
    this.maxBuffered = opts.maxBuffered;
    this.log = opts.logger.child({ component: "request-log-writer" });
    this.timer = setInterval(() => {
      this.warnDropped();
      if (this.buffer.length > 0) this.start();
    }, opts.flushIntervalMs);
    this.timer.unref();
  }

  write(row: RequestLogRow): void {
    if (this.closed) return this.drop(1, "writer closed");
    if (this.buffer.length >= this.maxBuffered) return this.drop(1, "buffer full");
    let encoded: string | null;
    try {
      encoded = encodeRow(row);
    } catch {
      // A row that breaks the RequestLogRow contract at run time (a caller's bug) must not break write().
      encoded = null;
    }
    if (encoded === null) return this.drop(1, "invalid row");
    this.buffer.push(encoded);
    if (this.buffer.length >= this.batchSize && !this.failing) this.start();
  }

  flush(): Promise<void> {
    if (!this.running) return this.run();
    // Callers wait for the flush in progress and then one more, shared by everyone who asked meanwhile.
    this.queued ??= this.running.then(() => {
      this.queued = null;
      // The finished flush may already have started the next one; flush() waits for it rather than racing it.
      return this.flush();
    });
    return this.queued;
  }

  close(): Promise<void> {
    this.closed = true;
    this.closing ??= this.shutdown();
    return this.closing;
  }

  stats(): RequestLogStats {
    return {
      written: this.written,
      dropped: this.dropped,
      failedFlushes: this.failedFlushes,
      buffered: this.buffer.length + this.inFlight,
    };
  }

  private drop(count: number, reason: string) {
    this.dropped += count;
    this.droppedSinceWarn += count;
    this.lastDropReason = reason;
    this.warnDropped();
  }

  /** At most one warning per interval, carrying every drop since the last one. */
  private warnDropped(force = false) {
    const now = Date.now();
    if (this.droppedSinceWarn === 0 || (!force && now - this.lastDropWarn < DROP_WARN_INTERVAL_MS)) return;
    this.log.warn(
      { dropped: this.droppedSinceWarn, dropped_total: this.dropped, last_reason: this.lastDropReason },
      "request log rows dropped",
    );
    this.droppedSinceWarn = 0;
    this.lastDropWarn = now;
  }

  private async insert(rows: string[]): Promise<boolean> {
    const count = rows.length;
    const { opts } = this;
    try {
      const client = await opts.pool.connect();
      try {
        await insertBatch(client, rows, opts.statementTimeoutMs);
        client.release();
      } catch (err) {
        // A connection whose statement was cut or abandoned may be mid-COPY: it is closed, not reused.
        client.release(!answeredByServer(err));
        throw err;
      }
      this.written += count;
      opts.health?.ok();
      return true;
    } catch (err) {
      this.failedFlushes++;
      // A driver error's message can quote the offending value; the SQLSTATE (or errno) is enough to act on.
      if (opts.health && isTransientDbError(err)) opts.health.failed(err, "request log");
      else this.log.warn({ code: faultCode(err), rows: count, failed_flushes: this.failedFlushes }, "request log flush failed");
      // The same batch would fail again: it is dropped (and counted), not retried for ever.
      if (isDataError(err)) {
        this.drop(count, "batch rejected by the database");
        return true;
      }
      return false;
    }
  }

  /** Writes the rows buffered when it starts, batch by batch; a failed batch returns to the front. */
  private async drain(): Promise<void> {
    let remaining = this.buffer.length;
    while (remaining > 0) {
      const batch = this.buffer.splice(0, Math.min(this.batchSize, remaining));
      remaining -= batch.length;
      this.inFlight = batch.length;
      const ok = await this.insert(batch);
      this.inFlight = 0;
      if (!ok) {
        this.buffer = batch.concat(this.buffer);
        const excess = this.buffer.length - this.maxBuffered;
        if (excess > 0) {
          this.buffer.splice(0, excess);
          this.drop(excess, "buffer full while the database is failing");
        }
        this.failing = true;
        return;
      }
      this.failing = false;
    }
  }

  private run(): Promise<void> {
    const current = this.drain()
      .catch((err: unknown) => this.log.error({ err }, "request log writer failed"))
      .finally(() => {
        this.running = null;
        if (!this.failing && !this.closed && this.buffer.length >= this.batchSize) this.start();
      });
    this.running = current;
    return current;
  }

  private start() {
    if (!this.running) void this.run();
  }

  private async shutdown() {
    clearInterval(this.timer);
    await this.flush();
    const giveUpAt = performance.now() + (this.opts.closeGraceMs ?? CLOSE_GRACE_MS);
    for (let attempt = 1; this.buffer.length > 0 && performance.now() < giveUpAt; attempt++) {
      await sleep(Math.min(backoffMs(attempt - 1, CLOSE_BACKOFF), Math.max(0, giveUpAt - performance.now())));
      await this.flush();
    }
    if (this.buffer.length > 0) {
      const lost = this.buffer.length;
      this.buffer = [];
      this.drop(lost, "database unavailable at shutdown");
    }
    this.warnDropped(true);
  }
}

export function createRequestLogWriter(opts: RequestLogWriterOptions): RequestLogWriter {
  return new BatchedRequestLogWriter(opts);
}
