import type pg from "pg";
import type { Pool } from "../../db/pool.js";
import { requestRowRange } from "../../analytics/log-range.js";
import { inTransaction } from "../../db/transaction.js";
import { errors } from "../../errors.js";
import {
  changeCase,
  findOwnCase,
  findOwnRequest,
  insertCase,
  insertUserMessage,
  latestAnswerJobStatus,
  latestEvidence,
  latestMessages,
  listCaseRows,
  lockOpenCase,
  lockOwnCase,
  OPEN_REQUEST_KEY,
  type CaseChange,
  type CaseListRow,
  type CaseRow,
  type EvidenceRow,
  type MessageRow,
} from "./cases-sql.js";
import { isUuid } from "../../ids.js";
import { decodeCaseCursor, encodeCaseCursor } from "./case-cursor.js";
import { enqueueJob } from "../worker-jobs/jobs-sql.js";
import { requestFacts } from "./request-facts.js";
import type {
  CreateCaseBody,
  UserCase,
  UserCaseDetail,
  UserCasePage,
  UserCaseResult,
  UserCaseSummary,
  UserMessageResult,
} from "@model-gateway/worker-kit/wire/user-cases";

// The user side of support cases (docs/support.md, "Cases (user side)"): a user opens a case about one of their
// own requests, writes to it, resolves, reopens, hands it to staff and retries a failed answer. Each change and
// the job it queues commit in one transaction, so no case waits for a job nobody queued and no job carries a
// revision its case never had. Routes (./user-routes.ts) validate; this module decides.

/** The transcript a detail shows: the latest messages, `history_truncated` when older ones exist. */
export const TRANSCRIPT_LIMIT = 50;
/** The evidence a detail shows: the latest items. */
export const EVIDENCE_LIMIT = 100;

// One message for every case the caller cannot see: unknown, malformed or someone else's (no existence oracle).
export const caseNotFound = () => errors.notFound("No such case.");

const iso = (d: Date) => d.toISOString();

/** What a case's list entry and its full view share. */
const caseBase = (row: CaseRow) => ({
  id: row.id,
  request_id: row.request_id,
  locale: row.locale,
  status: row.status,
  handoff: row.handoff,
  staff_hold: row.staff_hold,
  revision: row.revision,
  created_at: iso(row.created_at),
  updated_at: iso(row.updated_at),
  resolved_at: row.resolved_at === null ? null : iso(row.resolved_at),
});

export const toUserCase = (row: CaseRow): UserCase =>
  Object.assign(caseBase(row), { facts: row.facts, card: row.card, incident_summary: row.incident_summary });

export const toSummary = (row: CaseRow): UserCaseSummary =>
  Object.assign(caseBase(row), { model: row.facts?.model ?? null, problem: row.card?.problem ?? null });

/** What the workers' answers on the case cost (`cost_usd` null when some part of it is unknown). */
export const caseUsage = (row: CaseRow) => ({
  model_calls: row.model_calls,
  tool_calls: row.tool_calls,
  input_tokens: Number(row.input_tokens),
  output_tokens: Number(row.output_tokens),
  cost_usd: row.cost_usd,
});

/** The latest evidence rows (newest first, as read) in the order a detail shows them: oldest first. */
export const evidenceOf = (rows: EvidenceRow[]) =>
  rows.reverse().map((e) => ({ id: e.ref, kind: e.kind, content: e.content, created_at: iso(e.created_at) }));

/** One page of a case list: `limit` of the `limit + 1` rows read, and the cursor when a further page exists. */
export function casePage<R extends CaseListRow, T>(rows: R[], limit: number, toItem: (row: R) => T): { cases: T[]; next_cursor?: string } {
  const shown = rows.slice(0, limit);
  const page: { cases: T[]; next_cursor?: string } = { cases: shown.map(toItem) };
  const last = shown.at(-1);
  if (rows.length > limit && last) page.next_cursor = encodeCaseCursor({ t: last.cursor_t, id: last.id });
  return page;
}

const toMessage = (m: MessageRow) => ({ role: m.role, content: m.content, created_at: iso(m.created_at) });

/**
 * Adds a user message to a locked open case, bumps its revision and queues what answers it: an `answer` job, or
 * a private `staff_draft` job while staff are on the case (handoff asked, or a staff hold).
 */
async function addUserMessage(client: pg.PoolClient, locked: CaseRow, content: string): Promise<UserMessageResult> {
  const message = await insertUserMessage(client, locked.id, content);
  const row = await changeCase(client, locked.id, "message");
  await enqueueJob(client, { caseId: row.id, kind: row.handoff || row.staff_hold ? "staff_draft" : "answer", revision: row.revision });
  return { case: toUserCase(row), message: toMessage(message) };
}

async function lockForChange(client: pg.PoolClient, userId: string, caseId: string): Promise<CaseRow> {
  const row = isUuid(caseId) ? await lockOwnCase(client, userId, caseId) : null;
  if (!row) throw caseNotFound();
  return row;
}

/**
 * Opens a case about one of the user's own requests, or reuses the open one (`created` false). Either way an
 * answer is queued: with a question, the question is its first (or next) user message; without one, the worker
 * diagnoses from the facts alone. A reused case without a question queues nothing new. The request is looked up in
 * the request log's database (`logPool`); with the log apart, a request whose record is still in the outbox is not
 * there yet, and is the 404 to retry later that the spec describes.
 */
export async function createCase(
  { pool, logPool }: { pool: Pool; logPool: Pool },
  userId: string,
  body: CreateCaseBody,
  log: { retentionDays: number; resolveMs: number },
): Promise<{ result: UserCaseResult; created: boolean }> {
  const range = requestRowRange(body.request_id, new Date(), log.retentionDays, log.resolveMs);
  const logged = await findOwnRequest(logPool, userId, body.request_id, range);
  if (!logged) {
    throw errors.notFound(
      "No request with this ID in your request log. A request is logged a few seconds after it ends: if you just made it, retry shortly.",
    );
  }
  const facts = requestFacts(logged);
  // A case resolved between the conflict and the lock leaves nothing open: the second round inserts.
  for (let round = 0; round < 3; round++) {
    const outcome = await inTransaction(pool, async (client) => {
      const inserted = await insertCase(client, { userId, requestId: body.request_id, locale: body.locale, facts });
      if (inserted) {
        if (body.question !== undefined) await insertUserMessage(client, inserted.id, body.question);
        await enqueueJob(client, { caseId: inserted.id, kind: "answer", revision: inserted.revision });
        return { result: { case: toUserCase(inserted) }, created: true };
      }
      const open = await lockOpenCase(client, userId, body.request_id);
      if (!open) return null;
      if (body.question === undefined) return { result: { case: toUserCase(open) }, created: false };
      return { result: { case: (await addUserMessage(client, open, body.question)).case }, created: false };
    });
    if (outcome) return outcome;
  }
  throw errors.internal();
}

/** The user's cases, newest first; `limit` is validated by the caller. */
export async function listCases(pool: Pool, userId: string, page: { limit: number; cursor?: string | undefined }): Promise<UserCasePage> {
  const after = page.cursor === undefined ? null : decodeCaseCursor(page.cursor);
  // One row more than asked tells whether another page exists, so the last page never links to an empty one.
  return casePage(await listCaseRows(pool, userId, page.limit + 1, after), page.limit, toSummary);
}

export async function caseDetail(pool: Pool, userId: string, caseId: string): Promise<UserCaseDetail> {
  if (!isUuid(caseId)) throw caseNotFound();
  // One snapshot for the case, its messages and its evidence: a worker's answer commits its message, the card and
  // the evidence together, and a detail read across that commit would show the answer without its card.
  const read = await inTransaction(pool, async (db) => {
    await db.query("set transaction isolation level repeatable read, read only");
    const row = await findOwnCase(db, userId, caseId);
    if (!row) return null;
    const messages = await latestMessages(db, row.id, TRANSCRIPT_LIMIT + 1);
    return { row, messages, evidence: await latestEvidence(db, row.id, EVIDENCE_LIMIT) };
  });
  if (!read) throw caseNotFound();
  const { row, messages, evidence } = read;
  return {
    case: toUserCase(row),
    messages: messages.slice(0, TRANSCRIPT_LIMIT).reverse().map(toMessage),
    evidence: evidenceOf(evidence),
    usage: caseUsage(row),
    history_truncated: messages.length > TRANSCRIPT_LIMIT,
  };
}

/** A user message; a resolved case answers 409 (reopen it first: reopening is where the one-open-case rule is checked). */
export function postMessage(pool: Pool, userId: string, caseId: string, content: string): Promise<UserMessageResult> {
  return inTransaction(pool, async (client) => {
    const locked = await lockForChange(client, userId, caseId);
    if (locked.status !== "open") throw errors.conflict("The case is resolved; reopen it to write to it.");
    return addUserMessage(client, locked, content);
  });
}

async function change(pool: Pool, userId: string, caseId: string, decide: (row: CaseRow) => CaseChange | null): Promise<UserCaseResult> {
  return inTransaction(pool, async (client) => {
    const locked = await lockForChange(client, userId, caseId);
    const what = decide(locked);
    return { case: toUserCase(what === null ? locked : await changeCase(client, locked.id, what)) };
  });
}

/** Resolves the case; resolving a resolved case changes nothing. */
export const resolveCase = (pool: Pool, userId: string, caseId: string) =>
  change(pool, userId, caseId, (row) => (row.status === "resolved" ? null : "resolve"));

/** A reopen that met another open case of the same request (the partial unique index) as a 409; any other error as it is. */
export function reopenRefusal(err: unknown): unknown {
  const pgErr = err as { code?: unknown; constraint?: unknown };
  if (pgErr.code === "23505" && pgErr.constraint === OPEN_REQUEST_KEY) {
    return errors.conflict("Another case is open for the same request; continue there.");
  }
  return err;
}

/** Opens a resolved case again; 409 when another case is open for the same request. An open case is left as is. */
export async function reopenCase(pool: Pool, userId: string, caseId: string): Promise<UserCaseResult> {
  try {
    return await change(pool, userId, caseId, (row) => (row.status === "open" ? null : "reopen"));
  } catch (err) {
    throw reopenRefusal(err);
  }
}

/** Asks for staff: later messages queue private staff drafts. 409 on a resolved case; asked twice, nothing changes. */
export const handoffCase = (pool: Pool, userId: string, caseId: string) =>
  change(pool, userId, caseId, (row) => {
    if (row.status !== "open") throw errors.conflict("The case is resolved; reopen it to ask for staff.");
    return row.handoff ? null : "handoff";
  });

/** Queues a new answer job at the current revision when the case's latest answer job failed; 409 otherwise. */
export function retryCase(pool: Pool, userId: string, caseId: string): Promise<UserCaseResult> {
  return inTransaction(pool, async (client) => {
    const locked = await lockForChange(client, userId, caseId);
    if (locked.status !== "open") throw errors.conflict("The case is resolved; reopen it to retry.");
    if ((await latestAnswerJobStatus(client, locked.id)) !== "failed") throw errors.conflict("The case has no failed answer to retry.");
    await enqueueJob(client, { caseId: locked.id, kind: "answer", revision: locked.revision });
    return { case: toUserCase(locked) };
  });
}
