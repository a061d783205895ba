import { z } from "zod";
import { IMAGE_USAGE_FALLBACK_REASONS, type ImageUsageFallbackReason } from "../billing/image-quota.js";
import { ERROR_CLASSES, ERROR_CODES, errors, type ErrorCode } from "../errors.js";
import type { Queryable } from "../db/pool.js";
import { USAGE_SOURCES, type ErrorClass, type UsageSource } from "./types.js";

/**
 * A request as its user sees it. Routing metadata (upstream model, provider, fallback path, upstream cost)
 * stays private. quota_charged is a JSON number: the table's check constraint keeps it within
 * Number.MAX_SAFE_INTEGER, so the number is exact and clients need no big-integer parsing to add up their
 * bill. cost_usd (pay-as-you-go requests, else null) is a JSON number too, as the answer's `usage.cost` is.
 */
export const userRequestLogSchema = z.object({
  request_id: z.string().meta({ description: "The X-Request-Id the request was answered with." }),
  created_at: z.iso.datetime(),
  route: z.string().meta({ description: "The route pattern, as `/v1/chat/completions`." }),
  model: z.string().meta({ description: "The public model ID the client sent." }),
  status: z.int(),
  error_class: z.enum(ERROR_CLASSES).nullable(),
  error_code: z
    .enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]])
    .nullable()
    .meta({ description: "The gateway's own error code (docs/api.md), null for a success." }),
  streamed: z.boolean(),
  input_tokens: z.int(),
  output_tokens: z.int(),
  cached_tokens: z.int(),
  quota_charged: z.int().meta({ description: "Quota units charged (exact: always below 2^53)." }),
  cost_usd: z.number().nullable().meta({ description: "USD charged on pay-as-you-go, else null." }),
  usage_source: z.enum(USAGE_SOURCES),
  gpt_image_usage_fallback: z
    .enum(IMAGE_USAGE_FALLBACK_REASONS)
    .nullable()
    .meta({ description: "Why an image request of a designated model was billed by the per-image fallback (docs/billing.md), else null." }),
  latency_ms: z.number(),
  ttfb_ms: z.number().nullable(),
});

export type UserRequestLog = z.infer<typeof userRequestLogSchema>;

export const userRequestPageSchema = z.object({
  requests: z.array(userRequestLogSchema),
  next_cursor: z.string().nullable().meta({ description: "Pass as `cursor` for the next (older) page; null on the last page." }),
});

export type UserRequestPage = z.infer<typeof userRequestPageSchema>;

interface DbRow {
  request_id: string;
  created_at: Date;
  cursor_t: string;
  route: string;
  public_model: string;
  status: number;
  error_class: ErrorClass | null;
  error_code: ErrorCode | null;
  streamed: boolean;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  quota_charged: string;
  cost_usd: string | null;
  usage_source: UsageSource;
  gpt_image_usage_fallback: ImageUsageFallbackReason | null;
  latency_ms: number;
  ttfb_ms: number | null;
}

// The cursor carries PostgreSQL's own text of created_at (microseconds): a JS Date would truncate to
// milliseconds and skip or repeat rows whose timestamps differ below that.
const SELECT = `select request_id, created_at,
  to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as cursor_t,
  route, public_model, status, error_class, error_code, streamed, input_tokens, output_tokens, cached_tokens,
  quota_charged, cost_usd::text, usage_source, gpt_image_usage_fallback, latency_ms::float8 as latency_ms, ttfb_ms::float8 as ttfb_ms
from request_logs`;
const ORDER = "order by created_at desc, request_id desc";
// $3 is the oldest created_at the retention keeps (null: all): the day partitions before it are not read. A next
// page also names its upper bound on its own (created_at <=), which the row comparison alone does not prune by.
const SINCE = "created_at >= coalesce($3::timestamptz, '-infinity')";
const FIRST_PAGE = `${SELECT} where user_id = $1 and ${SINCE} ${ORDER} limit $2`;
// A row comparison matches the (user_id, created_at desc, request_id desc) index, so each page is one range scan.
const NEXT_PAGE = `${SELECT} where user_id = $1 and ${SINCE} and created_at <= $4::timestamptz
  and (created_at, request_id) < ($4::timestamptz, $5::text) ${ORDER} limit $2`;

const CURSOR_TIME = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.\d{6}Z$/;

interface Cursor {
  t: string;
  id: string;
}

const encodeCursor = (cursor: Cursor) => Buffer.from(JSON.stringify(cursor)).toString("base64url");

function decodeCursor(value: string): Cursor {
  const invalid = () => errors.badRequest("Invalid cursor; pass the next_cursor of a previous page unchanged.", "cursor", "invalid_cursor");
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(value, "base64url").toString("utf8"));
  } catch {
    throw invalid();
  }
  const { t, id } = (parsed ?? {}) as Partial<Record<keyof Cursor, unknown>>;
  if (typeof t !== "string" || typeof id !== "string" || id.includes("\0")) throw invalid();
  const seconds = CURSOR_TIME.exec(t)?.[1];
  const date = new Date(`${seconds}Z`);
  // The round trip rejects what the pattern lets through but PostgreSQL would refuse (2025-02-30, 24:00:00, year 0).
  if (!seconds || Number.isNaN(date.getTime()) || date.getUTCFullYear() < 1 || date.toISOString().slice(0, 19) !== seconds) {
    throw invalid();
  }
  return { t, id };
}

function toApi(row: DbRow): UserRequestLog {
  return {
    request_id: row.request_id,
    created_at: row.created_at.toISOString(),
    route: row.route,
    model: row.public_model,
    status: row.status,
    error_class: row.error_class,
    error_code: row.error_code,
    streamed: row.streamed,
    input_tokens: row.input_tokens,
    output_tokens: row.output_tokens,
    cached_tokens: row.cached_tokens,
    quota_charged: Number(row.quota_charged),
    cost_usd: row.cost_usd === null ? null : Number(row.cost_usd),
    usage_source: row.usage_source,
    gpt_image_usage_fallback: row.gpt_image_usage_fallback,
    latency_ms: row.latency_ms,
    ttfb_ms: row.ttfb_ms,
  };
}

/**
 * The user's own requests created since `since` (the retention's bound, null for all), newest first,
 * keyset-paginated; `limit` is validated by the caller.
 */
export async function listUserRequests(
  pool: Queryable,
  userId: string,
  page: { limit: number; cursor?: string | undefined },
  since: Date | null,
): Promise<UserRequestPage> {
  const after = page.cursor === undefined ? null : decodeCursor(page.cursor);
  // One row more than asked tells whether another page exists, so the last page never links to an empty one.
  const { rows } = after
    ? await pool.query<DbRow>(NEXT_PAGE, [userId, page.limit + 1, since, after.t, after.id])
    : await pool.query<DbRow>(FIRST_PAGE, [userId, page.limit + 1, since]);
  const shown = rows.slice(0, page.limit);
  const last = shown.at(-1);
  return {
    requests: shown.map(toApi),
    next_cursor: rows.length > page.limit && last ? encodeCursor({ t: last.cursor_t, id: last.request_id }) : null,
  };
}
