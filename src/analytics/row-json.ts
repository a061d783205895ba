import { isUuid } from "../ids.js";
import type { RequestLogRow } from "./types.js";

// A request-log row as the JSON object the writer's INSERT reads with json_to_recordset (writer.ts). Encoded
// when the row is written, one JSON.stringify per request: a batch is then the rows joined by commas, so a
// flush does no per-value work on the event loop (pg's escaping of 20 array parameters of 500 values each
// held it for 2-3 ms once a second), and a buffered row is one flat string rather than an object graph the
// garbage collector has to trace.

const INT4_MAX = 2_147_483_647;
const SMALLINT_MAX = 32_767;
const MS_MAX = 999_999_999.999;
const QUOTA_MAX = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * The longest text a row's column holds (docs/security.md, "Input validation and logs"): validation already
 * bounds what a client sends (a model at 256 characters, IDENTIFIER_MAX_CHARS), and the rest is the gateway's
 * own or the operator's; this is the last line, so that a path that forgot a bound cannot store a megabyte.
 */
export const ROW_TEXT_MAX_CHARS = 256;
/** The most entries of `fallback_path` a row keeps: a model has a handful of targets. */
export const ROW_FALLBACK_MAX = 16;

/**
 * Text PostgreSQL takes from JSON, at most ROW_TEXT_MAX_CHARS: no NUL (text refuses it) and no lone surrogate
 * (the JSON parser refuses its escape; a cut through a pair leaves one). A model name can come from the
 * client, so either would otherwise fail the whole batch.
 */
function text(value: string): string {
  const short = value.length > ROW_TEXT_MAX_CHARS ? value.slice(0, ROW_TEXT_MAX_CHARS) : value;
  const clean = short.includes("\0") ? short.replaceAll("\0", "") : short;
  return clean.isWellFormed() ? clean : clean.toWellFormed();
}
const optText = (value: string | null) => (value === null ? null : text(value));
const textList = (values: string[]) => (values.length > ROW_FALLBACK_MAX ? values.slice(0, ROW_FALLBACK_MAX) : values).map(text);
const clampInt = (value: number, max: number) => (Number.isFinite(value) ? Math.min(Math.max(Math.round(value), 0), max) : 0);
// Strings: numeric(12,3) then takes toFixed's digits exactly.
const clampMs = (value: number) => (Number.isFinite(value) ? Math.min(Math.max(value, 0), MS_MAX).toFixed(3) : "0.000");

/**
 * The row as JSON text; null for a row no retry could ever store, which is dropped rather than failing its
 * whole batch forever. Throws only on a row that breaks the RequestLogRow contract at run time.
 */
export function encodeRow(r: RequestLogRow): string | null {
  if (
    !r.requestId ||
    r.requestId.includes("\0") ||
    !r.requestId.isWellFormed() ||
    !isUuid(r.userId) ||
    (r.keyId !== null && !isUuid(r.keyId)) ||
    r.quotaCharged < 0n ||
    r.quotaCharged > QUOTA_MAX ||
    Number.isNaN(r.createdAt.getTime()) ||
    Number.isNaN(r.receivedAt.getTime())
  ) {
    return null;
  }
  // Keys are the column names of the INSERT's recordset; the object literal keeps one shape for every row.
  return JSON.stringify({
    request_id: r.requestId,
    user_id: r.userId,
    key_id: r.keyId,
    route: text(r.route),
    client_protocol: text(r.clientProtocol),
    public_model: text(r.publicModel),
    upstream_model: optText(r.upstreamModel),
    provider: optText(r.provider),
    fallback_path: textList(r.fallbackPath),
    status: clampInt(r.status, SMALLINT_MAX),
    error_class: r.errorClass,
    error_code: r.errorCode,
    input_tokens: clampInt(r.inputTokens, INT4_MAX),
    output_tokens: clampInt(r.outputTokens, INT4_MAX),
    cached_tokens: clampInt(r.cachedTokens, INT4_MAX),
    quota_charged: r.quotaCharged.toString(),
    usage_source: r.usageSource,
    gpt_image_usage_fallback: optText(r.gptImageUsageFallback),
    latency_ms: clampMs(r.latencyMs),
    ttfb_ms: r.ttfbMs === null ? null : clampMs(r.ttfbMs),
    streamed: r.streamed,
    created_at: r.createdAt.toISOString(),
    received_at: r.receivedAt.toISOString(),
    // Exact decimal text: numeric takes its digits as written.
    cost_usd: r.costUsd,
    upstream_cost_usd: r.upstreamCostUsd,
  });
}

/**
 * The INSERT of encoded rows from the JSON array `param` (an SQL expression): the writer's batches, and the
 * ledger's journal, which commits a metered request's row with its charge (docs/architecture.md). A retried row
 * carries the created_at it was encoded with, so (request_id, created_at), the partitioned log's key, finds it.
 */
export function insertRows(param: string): string {
  return `insert into request_logs (request_id, user_id, key_id, route, client_protocol, public_model,
  upstream_model, provider, fallback_path, status, error_class, error_code, input_tokens, output_tokens, cached_tokens,
  quota_charged, usage_source, latency_ms, ttfb_ms, streamed, received_at, created_at, cost_usd, upstream_cost_usd,
  gpt_image_usage_fallback)
select request_id, user_id, key_id, route, client_protocol, public_model, upstream_model, provider, fallback_path,
  status, error_class, error_code, input_tokens, output_tokens, cached_tokens, quota_charged, usage_source, latency_ms,
  ttfb_ms, streamed, received_at, created_at, cost_usd, upstream_cost_usd, gpt_image_usage_fallback
from json_to_recordset(${param}) as t(request_id text, user_id uuid, key_id uuid, route text, client_protocol text,
  public_model text, upstream_model text, provider text, fallback_path text[], status int2, error_class text,
  error_code text, input_tokens int4, output_tokens int4, cached_tokens int4, quota_charged int8, usage_source text,
  latency_ms numeric, ttfb_ms numeric, streamed bool, received_at timestamptz, created_at timestamptz, cost_usd numeric,
  upstream_cost_usd numeric, gpt_image_usage_fallback text)
on conflict (request_id, created_at) do nothing`;
}

/**
 * Rewrites written rows as the encoded rows of the JSON array `param` say, in what a refund changes (the ledger's
 * journal: a charge withdrawn after it had committed, src/quota/refund-sql.ts): the row becomes the 503 its client
 * was answered, with nothing charged.
 */
export function rewriteRows(param: string): string {
  // The records' own created_at bounds the partitions the update reads: a refund follows its charge by seconds.
  const span = (agg: string) => `(select ${agg}((x->>'created_at')::timestamptz) from json_array_elements(${param}) x)`;
  return `update request_logs r set status = t.status, error_class = t.error_class, error_code = t.error_code,
  quota_charged = t.quota_charged, cost_usd = t.cost_usd
from json_to_recordset(${param}) as t(request_id text, created_at timestamptz, status int2, error_class text, error_code text,
  quota_charged int8, cost_usd numeric)
where r.request_id = t.request_id and r.created_at = t.created_at and r.created_at >= ${span("min")} and r.created_at <= ${span("max")}`;
}

/** The writer's INSERT of one batch: $1 is the JSON array of encoded rows. */
export const INSERT_ROWS = insertRows("$1::json");

/** One batch as the INSERT's parameter. */
export const batchParameter = (rows: readonly string[]) => `[${rows.join(",")}]`;
