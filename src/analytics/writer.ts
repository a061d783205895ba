import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import type { Pool } from "../db/pool.js";
import type { RequestLogRow, RequestLogWriter } from "./types.js";

export interface RequestLogWriterOptions {
  pool: Pool;
  logger: Logger;
  /** Rows per INSERT; a flush starts early once this many are buffered. */
  batchSize: number;
  flushIntervalMs: number;
  /** Rows held in memory at most (besides the batch in flight); more are dropped and counted. */
  maxBuffered: number;
}

const DROP_WARN_INTERVAL_MS = 10_000;
const CLOSE_RETRIES = 3;
const CLOSE_BACKOFF_MS = 100;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const INT4_MAX = 2_147_483_647;
const SMALLINT_MAX = 32_767;
const MS_MAX = 999_999_999.999;
const COLUMNS = 22;

// One statement per batch whatever its size: each column travels as one array parameter, so the parameter
// count stays at 22 (far below the protocol's 65,535) and the plan is the same for every batch. unnest cannot
// take a ragged 2-D array, so each row's fallback path travels as a JSON text array and is rebuilt as text[].
const INSERT = `insert into request_logs (request_id, user_id, key_id, route, client_protocol, public_model,
  upstream_model, provider, fallback_path, status, error_class, input_tokens, output_tokens, cached_tokens,
  quota_charged, usage_source, latency_ms, ttfb_ms, streamed, created_at, cost_usd, upstream_cost_usd)
select request_id, user_id, key_id, route, client_protocol, public_model, upstream_model, provider,
  array(select jsonb_array_elements_text(fallback_path::jsonb)), status, error_class, input_tokens,
  output_tokens, cached_tokens, quota_charged, usage_source, latency_ms, ttfb_ms, streamed, created_at,
  cost_usd, upstream_cost_usd
from unnest($1::text[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
  $9::text[], $10::int2[], $11::text[], $12::int4[], $13::int4[], $14::int4[], $15::int8[], $16::text[],
  $17::numeric[], $18::numeric[], $19::bool[], $20::timestamptz[], $21::numeric[], $22::numeric[])
  as t(request_id, user_id, key_id, route, client_protocol, public_model, upstream_model, provider,
    fallback_path, status, error_class, input_tokens, output_tokens, cached_tokens, quota_charged,
    usage_source, latency_ms, ttfb_ms, streamed, created_at, cost_usd, upstream_cost_usd)
on conflict (request_id) do nothing`;

// PostgreSQL refuses NUL in text, and a model name can come from the client.
const text = (value: string) => (value.includes("\0") ? value.replaceAll("\0", "") : value);
const optText = (value: string | null) => (value === null ? null : text(value));
const clampInt = (value: number, max: number) => (Number.isFinite(value) ? Math.min(Math.max(Math.round(value), 0), max) : 0);
const clampMs = (value: number) => (Number.isFinite(value) ? Math.min(Math.max(value, 0), MS_MAX).toFixed(3) : "0.000");

/**
 * The row as the INSERT's column values; null for a row no retry could ever store, which is dropped rather
 * than failing its whole batch forever.
 */
function rowValues(r: RequestLogRow): unknown[] | null {
  if (
    !r.requestId ||
    r.requestId.includes("\0") ||
    !UUID.test(r.userId) ||
    (r.keyId !== null && !UUID.test(r.keyId)) ||
    r.quotaCharged < 0n ||
    r.quotaCharged > BigInt(Number.MAX_SAFE_INTEGER) ||
    Number.isNaN(r.createdAt.getTime())
  ) {
    return null;
  }
  return [
    r.requestId,
    r.userId,
    r.keyId,
    text(r.route),
    text(r.clientProtocol),
    text(r.publicModel),
    optText(r.upstreamModel),
    optText(r.provider),
    JSON.stringify(r.fallbackPath.map(text)),
    clampInt(r.status, SMALLINT_MAX),
    r.errorClass,
    clampInt(r.inputTokens, INT4_MAX),
    clampInt(r.outputTokens, INT4_MAX),
    clampInt(r.cachedTokens, INT4_MAX),
    r.quotaCharged.toString(),
    r.usageSource,
    clampMs(r.latencyMs),
    r.ttfbMs === null ? null : clampMs(r.ttfbMs),
    r.streamed,
    r.createdAt.toISOString(),
    r.costUsd,
    r.upstreamCostUsd,
  ];
}

/** Transposes the storable rows into one array per column. */
function toColumns(rows: RequestLogRow[]): { columns: unknown[][]; count: number } {
  const columns: unknown[][] = Array.from({ length: COLUMNS }, () => []);
  let count = 0;
  for (const row of rows) {
    let values: unknown[] | null;
    try {
      values = rowValues(row);
    } catch {
      // A row that breaks the RequestLogRow contract at run time (a caller's bug) must not break write().
      values = null;
    }
    if (!values) continue;
    values.forEach((value, c) => columns[c]!.push(value));
    count++;
  }
  return { columns, count };
}

/** SQLSTATE classes 22 (data exception) and 23 (constraint violation): the same batch would fail again. */
const isPoison = (code: unknown) => typeof code === "string" && /^2[23]/.test(code);

/**
 * Buffered request-log writer (DESIGN.md §5: batch log writes, keep per-request database work to the
 * reservation). write() is a push onto an array; batches go out on a timer or when a batch fills up.
 */
export function createRequestLogWriter(opts: RequestLogWriterOptions): RequestLogWriter {
  const { pool, logger, flushIntervalMs, maxBuffered } = opts;
  // A batch of 0 would never drain the buffer.
  const batchSize = Math.max(1, opts.batchSize);
  const log = logger.child({ component: "request-log-writer" });
  let buffer: RequestLogRow[] = [];
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

  async function insert(rows: RequestLogRow[]): Promise<boolean> {
    const { columns, count } = toColumns(rows);
    if (count < rows.length) drop(rows.length - count, "invalid row");
    if (count === 0) return true;
    try {
      await pool.query(INSERT, columns);
      written += count;
      return true;
    } catch (err) {
      failedFlushes++;
      const code = (err as { code?: unknown }).code;
      // A driver error's message can quote the offending value; the SQLSTATE (or errno) is enough to act on.
      log.warn({ code: code ?? "unknown", rows: count, failed_flushes: failedFlushes }, "request log flush failed");
      if (isPoison(code)) {
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
    for (let attempt = 1; attempt <= CLOSE_RETRIES && buffer.length > 0; attempt++) {
      await sleep(CLOSE_BACKOFF_MS * 2 ** (attempt - 1));
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
      buffer.push(row);
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
