import type { Queryable } from "../../db/pool.js";
import { CASE_COLUMNS, type CaseRow, type MessageRow } from "../cases/cases-sql.js";

// The staff side's statements (docs/support.md, "Staff"): any case, by id; the private parts of a case (its
// owner, its chat channel, drafts, jobs); and the staff's changes. A change runs on a case the caller locked.

/** A case as staff see it: the user's view plus who owns it and where it came from. */
export interface StaffCaseRow extends CaseRow {
  owner_user_id: string | null;
  source_ref: string | null;
  staff_actor: string | null;
}

const STAFF_COLUMNS = `${CASE_COLUMNS}, owner_user_id, source_ref, staff_actor`;

export async function findCase(db: Queryable, caseId: string, lock = false): Promise<StaffCaseRow | null> {
  const { rows } = await db.query<StaffCaseRow>({
    name: lock ? "support_staff_lock_case" : "support_staff_find_case",
    text: `select ${STAFF_COLUMNS} from support_cases where id = $1${lock ? " for update" : ""}`,
    values: [caseId],
  });
  return rows[0] ?? null;
}

/**
 * The staff's changes. `takeover` sets the hold and bumps the revision (an answer in flight can no longer
 * publish); `resume` clears the hold (the revision stays: nothing in flight was made for a held case's answer);
 * `resolve` as the user's; `reopen` opens a resolved case again with a new revision, the hold and the handoff
 * left as they were (only a resume lifts a hold: spec, "States and transitions").
 */
const STAFF_CHANGES = {
  takeover: "staff_hold = true, revision = revision + 1",
  resume: "staff_hold = false",
  resolve: "status = 'resolved', resolved_at = now(), revision = revision + 1",
  reopen: "status = 'open', resolved_at = null, revision = revision + 1",
  reply: "revision = revision + 1",
} as const;

export type StaffChange = keyof typeof STAFF_CHANGES;

/** Applies a staff change to a case the caller locked, recording `actor` as the case's last staff actor. */
export async function changeCaseAsStaff(db: Queryable, caseId: string, change: StaffChange, actor: string): Promise<StaffCaseRow> {
  const { rows } = await db.query<StaffCaseRow>({
    name: `support_staff_change_${change}`,
    text: `update support_cases set ${STAFF_CHANGES[change]}, staff_actor = $2, updated_at = now() where id = $1 returning ${STAFF_COLUMNS}`,
    values: [caseId, actor],
  });
  return rows[0]!;
}

/** A staff reply, its author recorded. */
export async function insertStaffMessage(db: Queryable, caseId: string, content: string, author: string): Promise<MessageRow> {
  const { rows } = await db.query<MessageRow>({
    name: "support_insert_staff_message",
    text: "insert into support_messages (case_id, role, content, author) values ($1, 'staff', $2, $3) returning role, content, author, created_at",
    values: [caseId, content, author],
  });
  return rows[0]!;
}

export interface DraftRow {
  id: string;
  kind: "staff" | "operator" | "bug";
  content: string;
  job_id: string | null;
  reviewed: boolean;
  author: string | null;
  created_at: Date;
}

const DRAFT_COLUMNS = "id, kind, content, job_id, reviewed, author, created_at";

export async function insertReviewedDraft(
  db: Queryable,
  caseId: string,
  kind: "operator" | "bug",
  content: string,
  author: string,
): Promise<DraftRow> {
  const { rows } = await db.query<DraftRow>({
    name: "support_insert_reviewed_draft",
    text: `insert into support_drafts (case_id, kind, content, reviewed, author) values ($1, $2, $3, true, $4) returning ${DRAFT_COLUMNS}`,
    values: [caseId, kind, content, author],
  });
  return rows[0]!;
}

export async function latestDrafts(db: Queryable, caseId: string, limit: number): Promise<DraftRow[]> {
  const { rows } = await db.query<DraftRow>({
    name: "support_latest_drafts",
    text: `select ${DRAFT_COLUMNS} from support_drafts where case_id = $1 order by created_at desc, id desc limit $2`,
    values: [caseId, limit],
  });
  return rows;
}

export interface JobSummaryRow {
  id: string;
  kind: string;
  status: string;
  revision: number;
  attempts: number;
  error_code: string | null;
  created_at: Date;
  finished_at: Date | null;
}

export async function latestJobs(db: Queryable, caseId: string, limit: number): Promise<JobSummaryRow[]> {
  const { rows } = await db.query<JobSummaryRow>({
    name: "support_latest_jobs",
    text: `select id, kind, status, revision, attempts, error_code, created_at, finished_at
      from support_jobs where case_id = $1 order by created_at desc, id desc limit $2`,
    values: [caseId, limit],
  });
  return rows;
}
