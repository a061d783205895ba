import type { LogRange } from "../../analytics/log-range.js";
import type { Queryable } from "../../db/pool.js";
import type { RequestLogFactsRow } from "./request-facts.js";
import type { Card, RequestFacts } from "@model-gateway/worker-kit/wire/support";

// The user side's statements on support_cases and its messages (./schema.ts, docs/support.md). Every statement
// that reads or changes one case names its owner too, so another user's case id finds nothing (404, never 403).
// A change locks the case row first (`for update`): two actions on one case run one after the other, and the
// revision a queued job carries is the one the change wrote.

/** The columns of a case a user may see, plus its usage. */
export interface CaseRow {
  id: string;
  request_id: string | null;
  locale: string;
  status: "open" | "resolved";
  handoff: boolean;
  staff_hold: boolean;
  revision: number;
  facts: RequestFacts | null;
  card: Card | null;
  /** The public summary of the published incident the case is linked to, else null. */
  incident_summary: string | null;
  model_calls: number;
  tool_calls: number;
  input_tokens: string;
  output_tokens: string;
  cost_usd: string | null;
  created_at: Date;
  updated_at: Date;
  resolved_at: Date | null;
}

// The incident's summary is read, never copied: publishing, editing or withdrawing it shows at once in every
// linked case. Its aggregates are never read here.
export const CASE_COLUMNS = `id, request_id, locale, status, handoff, staff_hold, revision, facts, card, model_calls, tool_calls,
  input_tokens::text as input_tokens, output_tokens::text as output_tokens, cost_usd::text as cost_usd, created_at, updated_at,
  resolved_at, (select i.public_summary from support_incidents i where i.id = support_cases.incident_id and i.published_at is not null)
  as incident_summary`;

export const OPEN_REQUEST_KEY = "support_cases_open_request_key";

/**
 * The log row of a request, only if it is the user's own; the columns are those the facts read, nothing else.
 * `range` bounds its created_at (analytics/log-range.ts), so only the day partitions that can hold it are read.
 */
export async function findOwnRequest(
  db: Queryable,
  userId: string,
  requestId: string,
  range: LogRange,
): Promise<RequestLogFactsRow | null> {
  const { rows } = await db.query<RequestLogFactsRow>({
    name: "support_find_own_request",
    text: `select request_id, route, client_protocol, public_model, status, error_code, error_class, streamed, input_tokens,
      output_tokens, cached_tokens, quota_charged::text as quota_charged, cost_usd::text as cost_usd,
      latency_ms::text as latency_ms, received_at, created_at
    from request_logs where request_id = $1 and user_id = $2
      and created_at >= coalesce($3::timestamptz, '-infinity') and created_at < coalesce($4::timestamptz, 'infinity')`,
    values: [requestId, userId, range.from, range.to],
  });
  return rows[0] ?? null;
}

/**
 * Opens a case unless an open one exists for the same own request: the partial unique index decides the race
 * (a concurrent insert waits for the other's commit, then does nothing). Null when one exists.
 */
export async function insertCase(
  db: Queryable,
  c: { userId: string; requestId: string; locale: string; facts: RequestFacts },
): Promise<CaseRow | null> {
  const { rows } = await db.query<CaseRow>({
    name: "support_insert_case",
    text: `insert into support_cases (owner_user_id, request_id, locale, facts) values ($1, $2, $3, $4)
    on conflict (owner_user_id, request_id) where status = 'open' and owner_user_id is not null and request_id is not null
    do nothing returning ${CASE_COLUMNS}`,
    values: [c.userId, c.requestId, c.locale, JSON.stringify(c.facts)],
  });
  return rows[0] ?? null;
}

export async function lockOpenCase(db: Queryable, userId: string, requestId: string): Promise<CaseRow | null> {
  const { rows } = await db.query<CaseRow>({
    name: "support_lock_open_case",
    text: `select ${CASE_COLUMNS} from support_cases where owner_user_id = $1 and request_id = $2 and status = 'open' for update`,
    values: [userId, requestId],
  });
  return rows[0] ?? null;
}

export async function lockOwnCase(db: Queryable, userId: string, caseId: string): Promise<CaseRow | null> {
  const { rows } = await db.query<CaseRow>({
    name: "support_lock_own_case",
    text: `select ${CASE_COLUMNS} from support_cases where id = $1 and owner_user_id = $2 for update`,
    values: [caseId, userId],
  });
  return rows[0] ?? null;
}

export async function findOwnCase(db: Queryable, userId: string, caseId: string): Promise<CaseRow | null> {
  const { rows } = await db.query<CaseRow>({
    name: "support_find_own_case",
    text: `select ${CASE_COLUMNS} from support_cases where id = $1 and owner_user_id = $2`,
    values: [caseId, userId],
  });
  return rows[0] ?? null;
}

/** The changes a user makes to a locked case; each but `none` bumps the revision (answers in flight go stale). */
const CHANGES = {
  message: "",
  resolve: ", status = 'resolved', resolved_at = now()",
  reopen: ", status = 'open', resolved_at = null",
  handoff: ", handoff = true",
} as const;

export type CaseChange = keyof typeof CHANGES;

/** Applies a change to a case the caller has locked; throws PostgreSQL's 23505 when a reopen meets another open case. */
export async function changeCase(db: Queryable, caseId: string, change: CaseChange): Promise<CaseRow> {
  const { rows } = await db.query<CaseRow>({
    name: `support_change_case_${change}`,
    text: `update support_cases set revision = revision + 1, updated_at = now()${CHANGES[change]} where id = $1 returning ${CASE_COLUMNS}`,
    values: [caseId],
  });
  return rows[0]!;
}

export interface MessageRow {
  role: "user" | "assistant" | "staff";
  content: string;
  /** Who wrote a staff message; for staff eyes only (the user's view leaves it out). */
  author: string | null;
  created_at: Date;
}

export async function insertUserMessage(db: Queryable, caseId: string, content: string): Promise<MessageRow> {
  const { rows } = await db.query<MessageRow>({
    name: "support_insert_user_message",
    text: "insert into support_messages (case_id, role, content) values ($1, 'user', $2) returning role, content, author, created_at",
    values: [caseId, content],
  });
  return rows[0]!;
}

/** The latest `limit` messages, newest first. */
export async function latestMessages(db: Queryable, caseId: string, limit: number): Promise<MessageRow[]> {
  const { rows } = await db.query<MessageRow>({
    name: "support_latest_messages",
    text: "select role, content, author, created_at from support_messages where case_id = $1 order by id desc limit $2",
    values: [caseId, limit],
  });
  return rows;
}

export interface EvidenceRow {
  ref: string;
  kind: string;
  content: unknown;
  created_at: Date;
}

/** The latest `limit` evidence items, newest first. */
export async function latestEvidence(db: Queryable, caseId: string, limit: number): Promise<EvidenceRow[]> {
  const { rows } = await db.query<EvidenceRow>({
    name: "support_latest_evidence",
    text: "select ref, kind, content, created_at from support_evidence where case_id = $1 order by created_at desc, id desc limit $2",
    values: [caseId, limit],
  });
  return rows;
}

/** The status of the case's latest answer job, null when it has none. */
export async function latestAnswerJobStatus(db: Queryable, caseId: string): Promise<string | null> {
  const { rows } = await db.query<{ status: string }>({
    name: "support_latest_answer_job",
    text: "select status from support_jobs where case_id = $1 and kind = 'answer' order by created_at desc, id desc limit 1",
    values: [caseId],
  });
  return rows[0]?.status ?? null;
}

export interface CaseListRow extends CaseRow {
  /** Read for the staff's list only; the user's list never shows them. */
  owner_user_id: string | null;
  source_ref: string | null;
  /** created_at as PostgreSQL's own text (microseconds), for the cursor. */
  cursor_t: string;
  /** Read for the staff's list only: the owner's email and the case's first user message. */
  owner_email?: string | null;
  question?: string | null;
}

const LIST_COLUMNS = `${CASE_COLUMNS}, owner_user_id, source_ref,
  to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as cursor_t`;
const LIST_ORDER = "order by created_at desc, id desc";
// What staff read a queue by: who asked and what. The first user message is found through (case_id, id), and cut to
// its opening (QUESTION_PREVIEW_CHARS) so a page of long questions stays small: the case's detail has it whole.
export const QUESTION_PREVIEW_CHARS = 280;
const STAFF_LIST_COLUMNS = `, (select u.email from users u where u.id = support_cases.owner_user_id) as owner_email,
  (select left(m.content, ${QUESTION_PREVIEW_CHARS}) from support_messages m where m.case_id = support_cases.id and m.role = 'user' order by m.id limit 1) as question`;

/**
 * Cases newest first, from after `cursor` when given: the user's own (`ownerUserId`), or every case for staff
 * (null). A row comparison matches the (owner, created_at, id) and (created_at, id) indexes.
 */
export async function listCaseRows(
  db: Queryable,
  ownerUserId: string | null,
  limit: number,
  after: { t: string; id: string } | null,
): Promise<CaseListRow[]> {
  const values: unknown[] = [limit];
  const where: string[] = [];
  if (ownerUserId !== null) where.push(`owner_user_id = $${values.push(ownerUserId)}`);
  if (after) where.push(`(created_at, id) < ($${values.push(after.t)}::timestamptz, $${values.push(after.id)}::uuid)`);
  const { rows } = await db.query<CaseListRow>({
    name: `support_list_cases_${ownerUserId === null ? "all" : "own"}_${after ? "next" : "first"}`,
    text: `select ${LIST_COLUMNS}${ownerUserId === null ? STAFF_LIST_COLUMNS : ""} from support_cases ${where.length > 0 ? `where ${where.join(" and ")}` : ""} ${LIST_ORDER} limit $1`,
    values,
  });
  return rows;
}
