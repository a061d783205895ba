import type { Pool } from "../../db/pool.js";
import { errors } from "../../errors.js";
import { insertAnswerMessage, insertDraft, insertEvidence, finishJob, setCaseCard, setHandoff } from "./complete-sql.js";
import { checkCompletionBody, judgeCompletion } from "./completion-rules.js";
import { inTransaction } from "../../db/transaction.js";
import { checkLeaseToken, leaseEnded } from "./lease.js";
import { addUsage, lockCase, lockJob, type LockedJob } from "./lease-sql.js";
import { completeResponseSchema, type CompleteRequest, type CompleteResponse } from "@model-gateway/worker-kit/wire/support";

const DRAFT_KIND = { staff_draft: "staff", operator_draft: "operator", bug_draft: "bug" } as const;

export const jobNotFound = () => errors.notFound("No such support job.", "job_not_found");

/**
 * Commits a worker's completion under its lease (docs/support.md, "Completing"): in one transaction holding the
 * job's and then the case's lock, the outcome is judged, what it publishes is written, the usage is added and
 * the job ends. A repeat with the same token answers the first result and changes nothing.
 */
export async function completeJob(pool: Pool, jobId: string, body: CompleteRequest): Promise<CompleteResponse> {
  checkCompletionBody(body);
  return inTransaction(pool, async (db) => {
    const job = await lockJob(db, jobId);
    if (!job) throw jobNotFound();
    const lease = checkLeaseToken(job, body.lease_token);
    const first = firstResult(job);
    if (first) return first;
    if (lease === "ended") throw leaseEnded();

    const on = await lockCase(db, job.case_id);
    const outcome = judgeCompletion(job, body, on);
    if (outcome === "published") await publish(db, job, body);
    if (outcome === "recorded" && job.kind === "answer" && body.disposition === "needs_staff") await setHandoff(db, job.case_id);
    await addUsage(db, job, body.usage);
    const response: CompleteResponse = { job_id: job.id, outcome, case_revision: on.revision };
    await finishJob(db, job.id, outcome === "published" || outcome === "recorded" ? "completed" : "discarded", response);
    return response;
  });
}

/** The stored answer of a job already completed (or discarded) under this token. */
function firstResult(job: LockedJob): CompleteResponse | null {
  if (job.status !== "completed" && job.status !== "discarded") return null;
  const stored = completeResponseSchema.safeParse(job.outcome);
  return stored.success ? stored.data : null;
}

async function publish(db: Parameters<typeof addUsage>[0], job: LockedJob, body: CompleteRequest): Promise<void> {
  if (job.kind !== "answer") {
    await insertDraft(db, { caseId: job.case_id, jobId: job.id, kind: DRAFT_KIND[job.kind], content: body.content });
    return;
  }
  await insertAnswerMessage(db, job.case_id, job.id, body.content);
  await setCaseCard(db, job.case_id, body.card);
  await insertEvidence(db, job.case_id, job.id, body.evidence);
}
