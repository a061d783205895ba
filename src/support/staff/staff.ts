import type { Pool } from "../../db/pool.js";
import { inTransaction } from "../../db/transaction.js";
import { errors } from "../../errors.js";
import { decodeCaseCursor } from "../cases/case-cursor.js";
import {
  caseNotFound,
  caseUsage,
  casePage,
  EVIDENCE_LIMIT,
  evidenceOf,
  reopenRefusal,
  toSummary,
  toUserCase,
  TRANSCRIPT_LIMIT,
} from "../cases/cases.js";
import { latestEvidence, latestMessages, listCaseRows } from "../cases/cases-sql.js";
import { resolveId } from "../resolve-id.js";
import { enqueueJob } from "../worker-jobs/jobs-sql.js";
import {
  changeCaseAsStaff,
  findCase,
  insertReviewedDraft,
  insertStaffMessage,
  latestDrafts,
  latestJobs,
  type DraftRow,
  type StaffCaseRow,
  type StaffChange,
} from "./staff-sql.js";
import type { DraftResult, StaffCaseDetail, StaffCasePage, StaffCaseResult, StaffReplyResult } from "@model-gateway/worker-kit/wire/staff";

// The staff side of the support workspace (docs/support.md, "Staff"): any case, with what only staff see; the
// hold (takeover / resume), resolve, reviewed replies on dashboard cases, and private operator and bug drafts.
// `actor` is who acts: `admin:<user id>` from the admin routes, `cli` from the gateway CLI.

const DRAFT_LIMIT = 50;
const JOB_LIMIT = 20;

const iso = (d: Date) => d.toISOString();

const privateParts = (row: Pick<StaffCaseRow, "owner_user_id" | "source_ref">) => ({
  owner_user_id: row.owner_user_id,
  source_ref: row.source_ref,
});
const toStaffCaseParts = (row: StaffCaseRow) => Object.assign(privateParts(row), { staff_actor: row.staff_actor });
const toStaffCase = (row: StaffCaseRow) => Object.assign(toUserCase(row), toStaffCaseParts(row));

const toDraft = (d: DraftRow) => ({
  id: d.id,
  kind: d.kind,
  content: d.content,
  job_id: d.job_id,
  reviewed: d.reviewed,
  author: d.author,
  created_at: iso(d.created_at),
});

export async function listStaffCases(pool: Pool, page: { limit: number; cursor?: string | undefined }): Promise<StaffCasePage> {
  const after = page.cursor === undefined ? null : decodeCaseCursor(page.cursor);
  return casePage(await listCaseRows(pool, null, page.limit + 1, after), page.limit, (row) =>
    Object.assign(toSummary(row), privateParts(row), { owner_email: row.owner_email ?? null, question: row.question ?? null }),
  );
}

export async function staffCaseDetail(pool: Pool, caseId: string): Promise<StaffCaseDetail> {
  const row = await findCase(pool, await resolveId(pool, "case", caseId));
  if (!row) throw caseNotFound();
  const [messages, drafts, evidence, jobs] = await Promise.all([
    latestMessages(pool, row.id, TRANSCRIPT_LIMIT + 1),
    latestDrafts(pool, row.id, DRAFT_LIMIT),
    latestEvidence(pool, row.id, EVIDENCE_LIMIT),
    latestJobs(pool, row.id, JOB_LIMIT),
  ]);
  return {
    case: toStaffCase(row),
    messages: messages
      .slice(0, TRANSCRIPT_LIMIT)
      .reverse()
      .map((m) => ({ role: m.role, content: m.content, author: m.author, created_at: iso(m.created_at) })),
    drafts: drafts.map(toDraft),
    evidence: evidenceOf(evidence),
    usage: caseUsage(row),
    jobs: jobs.map((j) => ({
      id: j.id,
      kind: j.kind as StaffCaseDetail["jobs"][number]["kind"],
      status: j.status as StaffCaseDetail["jobs"][number]["status"],
      revision: j.revision,
      attempts: j.attempts,
      error_code: j.error_code,
      created_at: iso(j.created_at),
      finished_at: j.finished_at === null ? null : iso(j.finished_at),
    })),
    history_truncated: messages.length > TRANSCRIPT_LIMIT,
  };
}

/** Runs `work` on the case locked; `caseId` is its id or an unambiguous prefix (else 404, or 400 `ambiguous_id`). */
function onLockedCase<T>(
  pool: Pool,
  caseId: string,
  work: (client: Parameters<Parameters<typeof inTransaction>[1]>[0], row: StaffCaseRow) => Promise<T>,
) {
  return inTransaction(pool, async (client) => {
    const row = await findCase(client, await resolveId(client, "case", caseId), true);
    if (!row) throw caseNotFound();
    return work(client, row);
  });
}

/**
 * Takes the case over (the hold survives chat-platform snapshots until resume), resumes it, resolves it, or
 * reopens it. The first three are idempotent: taking over a held case, resuming an unheld one, resolving a resolved
 * one change nothing. A reopen is not: it is an operator's claim that the case was resolved, so an open case answers
 * 409 `case_not_resolved` (of two concurrent reopens one wins and the other is told), and a case whose request has
 * another open case answers 409 `conflict`, as the user's reopen does.
 */
export function changeAsStaff(pool: Pool, caseId: string, change: Exclude<StaffChange, "reply">, actor: string): Promise<StaffCaseResult> {
  if (change === "reopen") return reopenAsStaff(pool, caseId, actor);
  return onLockedCase(pool, caseId, async (client, row) => {
    const unchanged =
      (change === "takeover" && row.staff_hold) ||
      (change === "resume" && !row.staff_hold) ||
      (change === "resolve" && row.status === "resolved");
    return { case: toStaffCase(unchanged ? row : await changeCaseAsStaff(client, row.id, change, actor)) };
  });
}

async function reopenAsStaff(pool: Pool, caseId: string, actor: string): Promise<StaffCaseResult> {
  try {
    return await onLockedCase(pool, caseId, async (client, row) => {
      if (row.status !== "resolved") throw errors.conflict("The case is open: only a resolved case reopens.", "case_not_resolved");
      return { case: toStaffCase(await changeCaseAsStaff(client, row.id, "reopen", actor)) };
    });
  } catch (err) {
    throw reopenRefusal(err);
  }
}

/**
 * A reviewed staff reply, on dashboard cases only (a chat-platform case is answered on the platform: 409). It
 * bumps the revision, so an automatic answer in flight does not follow the staff's reply.
 */
export function replyAsStaff(pool: Pool, caseId: string, content: string, actor: string): Promise<StaffReplyResult> {
  return onLockedCase(pool, caseId, async (client, row) => {
    if (row.source_ref !== null) throw errors.conflict("This is a chat-platform case: reply on the chat platform.");
    if (row.status !== "open") throw errors.conflict("The case is resolved; reopen it to reply.");
    const message = await insertStaffMessage(client, row.id, content, actor);
    const changed = await changeCaseAsStaff(client, row.id, "reply", actor);
    return {
      case: toStaffCase(changed),
      message: { role: message.role, content: message.content, author: message.author, created_at: iso(message.created_at) },
    };
  });
}

/** An operator or bug draft: saved as reviewed (`content`), or queued for a worker to generate. Never published. */
export function draftAsStaff(
  pool: Pool,
  caseId: string,
  kind: "operator" | "bug",
  content: string | undefined,
  actor: string,
): Promise<DraftResult> {
  return onLockedCase(pool, caseId, async (client, row) => {
    if (content !== undefined) {
      const draft = await insertReviewedDraft(client, row.id, kind, content, actor);
      return { case_id: row.id, draft: toDraft(draft), job_id: null };
    }
    const jobId = await enqueueJob(client, {
      caseId: row.id,
      kind: kind === "operator" ? "operator_draft" : "bug_draft",
      revision: row.revision,
    });
    return { case_id: row.id, draft: null, job_id: jobId };
  });
}
