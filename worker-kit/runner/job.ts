import type { Logger } from "pino";
import type { ClaimedJob, CompleteResponse, FailResponse, WorkerUsage } from "../wire/support.js";
import { describeError, GatewayHttpError } from "../client/errors.js";
import type { WorkerClient } from "../client/worker-client.js";
import type { LeaseTimes } from "./lease-deadline.js";
import { isLeaseLost, retryUntil, type Clock } from "./report.js";
import { raceTask, type TaskEnding } from "./task-race.js";
import { PermanentTaskError, type AnyTaskDefinition, type TaskResult } from "./task.js";
import { addUsage, EMPTY_USAGE } from "./usage.js";

// One claimed job from its task to the gateway's answer: a `job claimed` line when it begins, and exactly one line
// with its `outcome` when it ends.

/** What became of a job: the gateway's completion outcome, or how the runner ended it. */
export type JobOutcome = CompleteResponse["outcome"] | "failed" | "lease_lost" | "unreported";

/** The `error_code`s the runner fails a job with, besides a PermanentTaskError's own. */
export const RUNNER_ERROR_CODES = {
  /** The task threw (retryable). */
  taskError: "task_error",
  /** The task was still running at its lease deadline (retryable). */
  leaseDeadline: "lease_deadline",
  /** The worker was stopping and the task outlived the shutdown deadline, or was given back at once (retryable). */
  shutdown: "shutdown",
  /** The runner has no task for the job's kind (not retryable: another kind of worker must be deployed). */
  noTaskForKind: "no_task_for_kind",
  /** The gateway refused the task's answer as invalid (400); a new attempt may answer better (retryable). */
  completionRejected: "completion_rejected",
} as const;

export interface JobRun {
  client: WorkerClient;
  task: AnyTaskDefinition | undefined;
  job: ClaimedJob;
  lease: LeaseTimes;
  /** Aborted when the runner's shutdown deadline has passed, or when the runner gives its jobs back. */
  shutdown: AbortSignal;
  /** Aborted when the runner gives its jobs back: the gateway is told now, or soon, never at the lease's end. */
  givingBack: AbortSignal;
  logger: Logger;
  clock: Clock;
}

interface Failure {
  code: string;
  retryable: boolean;
  error?: unknown;
}

export async function runJob(run: JobRun): Promise<void> {
  const { job, clock } = run;
  const startedAt = clock.now();
  const log = run.logger.child({ job_id: job.id, kind: job.kind, case_id: job.case_id, attempt: job.attempt });
  log.info({ lease_expires_at: job.lease_expires_at }, "job claimed");
  let usage: WorkerUsage = EMPTY_USAGE;
  let ending: TaskEnding;
  if (run.task) {
    const helpers = {
      logger: log,
      deadline: new Date(run.lease.taskDeadline),
      addUsage: (report: Parameters<typeof addUsage>[1]) => {
        usage = addUsage(usage, report);
      },
    };
    ending = await raceTask(run.task, job, helpers, run.shutdown, clock);
  } else {
    ending = { kind: "error", error: new PermanentTaskError(RUNNER_ERROR_CODES.noTaskForKind, `no task for kind ${job.kind}`) };
  }
  // What the task spent until now is what is reported: an abandoned task's later reports come too late.
  const spent = usage;
  const fields = await settle(run, ending, spent, log);
  const level = fields.outcome === "lease_lost" || fields.outcome === "unreported" ? "warn" : "info";
  log[level]({ ...fields, usage: spent, duration_ms: clock.now() - startedAt }, `job ${fields.outcome}`);
}

type OutcomeFields = { outcome: JobOutcome } & Record<string, unknown>;

async function settle(run: JobRun, ending: TaskEnding, usage: WorkerUsage, log: Logger): Promise<OutcomeFields> {
  switch (ending.kind) {
    case "result":
      return complete(run, ending.result, usage, log);
    case "error":
      return ending.error instanceof PermanentTaskError
        ? fail(run, { code: ending.error.code, retryable: false, error: ending.error }, usage, log)
        : fail(run, { code: RUNNER_ERROR_CODES.taskError, retryable: true, error: ending.error }, usage, log);
    case "deadline":
      return fail(run, { code: RUNNER_ERROR_CODES.leaseDeadline, retryable: true }, usage, log);
    case "shutdown":
      return fail(run, { code: RUNNER_ERROR_CODES.shutdown, retryable: true }, usage, log);
  }
}

async function complete(run: JobRun, result: TaskResult, usage: WorkerUsage, log: Logger): Promise<OutcomeFields> {
  const { job } = run;
  const request = {
    lease_token: job.lease_token,
    revision: job.revision,
    content: result.content,
    card: result.card,
    evidence: result.evidence,
    usage,
    disposition: result.disposition,
  };
  try {
    const answer = await report(run, log, (signal) => run.client.complete(job.id, request, signal));
    return { outcome: answer.outcome, case_revision: answer.case_revision };
  } catch (err) {
    if (err instanceof GatewayHttpError && err.status === 400) {
      return fail(run, { code: RUNNER_ERROR_CODES.completionRejected, retryable: true, error: err }, usage, log);
    }
    return lost(err);
  }
}

async function fail(run: JobRun, failure: Failure, usage: WorkerUsage, log: Logger): Promise<OutcomeFields> {
  const { job } = run;
  const request = { lease_token: job.lease_token, error_code: failure.code, retryable: failure.retryable, usage };
  const cause = failure.error === undefined ? {} : { err: describeError(failure.error) };
  try {
    const answer: FailResponse = await report(run, log, (signal) => run.client.fail(job.id, request, signal));
    return { outcome: "failed", error_code: failure.code, retryable: failure.retryable, job_status: answer.status, ...cause };
  } catch (err) {
    return { ...lost(err), error_code: failure.code, ...cause };
  }
}

/** How long a job given back may take to tell the gateway: an operator who pressed Ctrl-C twice is waiting. */
const GIVE_BACK_REPORT_MS = 5_000;

function report<T>(run: JobRun, log: Logger, call: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const until = run.givingBack.aborted ? Math.min(run.lease.expiresAt, run.clock.now() + GIVE_BACK_REPORT_MS) : run.lease.expiresAt;
  return retryUntil(call, until, run.clock, (err, delayMs) =>
    log.debug({ err: describeError(err), delay_ms: delayMs }, "report failed; retrying"),
  );
}

function lost(err: unknown): OutcomeFields {
  return { outcome: isLeaseLost(err) ? "lease_lost" : "unreported", report_error: describeError(err) };
}
