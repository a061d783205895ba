import type { Queryable } from "../../db/pool.js";
import type { WorkerUsage } from "@model-gateway/worker-kit/wire/support";

// What complete and fail share (docs/support.md, "Leases"): the job row and then its case row locked, in that
// order in every transaction that locks both, and usage added to both.

export interface LockedJob {
  id: string;
  case_id: string;
  kind: "answer" | "staff_draft" | "operator_draft" | "bug_draft";
  revision: number;
  status: "queued" | "leased" | "completed" | "failed" | "discarded";
  attempts: number;
  lease_token_hash: string | null;
  /** The lease is still running by the database's clock. */
  lease_live: boolean;
  outcome: unknown;
}

export async function lockJob(db: Queryable, jobId: string): Promise<LockedJob | undefined> {
  const { rows } = await db.query<LockedJob>({
    name: "support_lock_job",
    text: `select id, case_id, kind, revision, status, attempts, lease_token_hash,
                  coalesce(lease_expires_at > now(), false) as lease_live, outcome
           from support_jobs where id = $1 for update`,
    values: [jobId],
  });
  return rows[0];
}

export interface LockedCase {
  status: "open" | "resolved";
  staff_hold: boolean;
  revision: number;
}

export async function lockCase(db: Queryable, caseId: string): Promise<LockedCase> {
  const { rows } = await db.query<LockedCase>({
    name: "support_lock_case",
    text: "select status, staff_hold, revision from support_cases where id = $1 for update",
    values: [caseId],
  });
  return rows[0]!;
}

// A sum with an unknown cost is unknown: null stays null, on either side.
const ADD_USAGE = (table: string) => `
update ${table} set model_calls = model_calls + $2, tool_calls = tool_calls + $3,
  input_tokens = input_tokens + $4, output_tokens = output_tokens + $5,
  cost_usd = case when cost_usd is null or $6::numeric is null then null else cost_usd + $6::numeric end,
  updated_at = now()
where id = $1`;

const usageValues = (id: string, u: WorkerUsage) => [id, u.model_calls, u.tool_calls, u.input_tokens, u.output_tokens, u.cost_usd];

/** Adds a worker's usage to its job and to the job's case. */
export async function addUsage(db: Queryable, job: { id: string; case_id: string }, usage: WorkerUsage): Promise<void> {
  await db.query({ name: "support_job_usage", text: ADD_USAGE("support_jobs"), values: usageValues(job.id, usage) });
  await db.query({ name: "support_case_usage", text: ADD_USAGE("support_cases"), values: usageValues(job.case_id, usage) });
}
