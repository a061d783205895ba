import type { ClaimedJob, CompleteResponse, FailResponse } from "@model-gateway/worker-kit/wire/support";

// The short human text of `gateway support job`'s commands (`--json` is the scripting interface; the staff verbs'
// text is cli/staff-views.ts). Pure: each function returns lines, so they are tested without a process.
export function claimText(jobs: ClaimedJob[]): string[] {
  if (jobs.length === 0) return ["no job to claim now"];
  return jobs.flatMap((job) => [
    `claimed ${job.kind} job ${job.id} of case ${job.case_id} (attempt ${job.attempt}), lease until ${job.lease_expires_at}`,
    `  --lease-token ${job.lease_token} --revision ${job.revision}`,
  ]);
}

export const completeText = (answer: CompleteResponse) => [
  `job ${answer.job_id}: ${answer.outcome} (case revision ${answer.case_revision})`,
];

export const failText = (answer: FailResponse) => [
  answer.status === "queued" ? `job ${answer.job_id}: queued again from ${answer.available_at}` : `job ${answer.job_id}: failed for good`,
];
