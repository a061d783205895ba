import type { Queryable } from "../../db/pool.js";
import type { SUPPORT_JOB_KINDS } from "@model-gateway/worker-kit/wire/support";

// The support jobs' statements (./schema.ts, docs/support.md). A job is queued in the transaction of the case
// event that asks for it (a user message, a draft request), so a case never waits for a job nobody queued.

export interface NewJob {
  caseId: string;
  kind: (typeof SUPPORT_JOB_KINDS)[number];
  /** The case revision the job is made for. */
  revision: number;
}

/** Queues a job for workers to claim; returns its id. */
export async function enqueueJob(db: Queryable, job: NewJob): Promise<string> {
  const { rows } = await db.query<{ id: string }>({
    name: "support_enqueue_job",
    text: "insert into support_jobs (case_id, kind, revision) values ($1, $2, $3) returning id",
    values: [job.caseId, job.kind, job.revision],
  });
  return rows[0]!.id;
}
