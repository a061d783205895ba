import type { Queryable } from "../../db/pool.js";
import type { Card, Evidence } from "@model-gateway/worker-kit/wire/support";

// What a completion writes (docs/support.md, "Completing"), inside the transaction holding the job and case locks.

export async function insertAnswerMessage(db: Queryable, caseId: string, jobId: string, content: string): Promise<void> {
  await db.query({
    name: "support_insert_answer",
    text: "insert into support_messages (case_id, role, content, job_id) values ($1, 'assistant', $2, $3)",
    values: [caseId, content, jobId],
  });
}

export async function insertEvidence(db: Queryable, caseId: string, jobId: string, evidence: Evidence[]): Promise<void> {
  if (evidence.length === 0) return;
  await db.query({
    name: "support_insert_evidence",
    text: `insert into support_evidence (case_id, job_id, ref, kind, content)
           select $1, $2, e.id, e.kind, coalesce(e.content, 'null'::jsonb)
           from jsonb_to_recordset($3::jsonb) as e(id text, kind text, content jsonb)`,
    values: [caseId, jobId, JSON.stringify(evidence)],
  });
}

/** The published answer's card replaces the case's (none sent: the case keeps its card). */
export async function setCaseCard(db: Queryable, caseId: string, card: Card | null): Promise<void> {
  await db.query({
    name: "support_set_card",
    text: "update support_cases set card = coalesce($2::jsonb, card), updated_at = now() where id = $1",
    values: [caseId, card === null ? null : JSON.stringify(card)],
  });
}

export async function setHandoff(db: Queryable, caseId: string): Promise<void> {
  await db.query({
    name: "support_set_handoff",
    text: "update support_cases set handoff = true, updated_at = now() where id = $1",
    values: [caseId],
  });
}

export async function insertDraft(
  db: Queryable,
  draft: { caseId: string; jobId: string; kind: "staff" | "operator" | "bug"; content: string },
): Promise<void> {
  await db.query({
    name: "support_insert_draft",
    text: "insert into support_drafts (case_id, kind, content, job_id) values ($1, $2, $3, $4)",
    values: [draft.caseId, draft.kind, draft.content, draft.jobId],
  });
}

/** Ends the job with its outcome, kept for a repeated completion; the token's hash stays to recognise it. */
export async function finishJob(db: Queryable, jobId: string, status: "completed" | "discarded", outcome: object): Promise<void> {
  await db.query({
    name: "support_finish_job",
    text: `update support_jobs set status = $2, outcome = $3::jsonb, lease_expires_at = null, finished_at = now(),
             updated_at = now() where id = $1`,
    values: [jobId, status, JSON.stringify(outcome)],
  });
}
