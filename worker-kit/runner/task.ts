import type { Logger } from "pino";
import type { Card, ClaimedJob, DISPOSITIONS, Evidence, SUPPORT_JOB_KINDS, WorkerUsage } from "../wire/support.js";

// A task in graphile-worker's style: one async function per job kind, `(job, helpers) => result`. The runner
// (./runner.ts) claims, keeps the lease honest, completes or fails, and reports usage; the task only thinks.

export type JobKind = (typeof SUPPORT_JOB_KINDS)[number];
export type Disposition = (typeof DISPOSITIONS)[number];

/** A claimed job of one kind. */
export type Job<K extends JobKind = JobKind> = ClaimedJob & { kind: K };

/** What a task answers: the runner adds the job's revision, its lease token and the usage, and completes. */
export interface TaskResult {
  content: string;
  card: Card | null;
  evidence: Evidence[];
  disposition: Disposition;
}

/** Usage as a task reports it, call by call; `cost_usd` absent or null means the price was not known. */
export type UsageReport = Partial<Omit<WorkerUsage, "cost_usd">> & { cost_usd?: string | null };

export interface TaskHelpers {
  /** The runner's logger with the job's id, kind, case and attempt bound. */
  logger: Logger;
  /**
   * Aborted when the task must stop: its lease is about to run out (the runner fails the job as retryable rather
   * than complete it late) or the worker is shutting down past its deadline. Pass it to every call the task makes.
   */
  signal: AbortSignal;
  /** When the runner stops waiting for this task (the lease's expiry minus the runner's safety margin). */
  deadline: Date;
  /**
   * Adds to the job's usage, reported with its completion or its failure. Counts add up; one report without a
   * known cost makes the job's `cost_usd` null (an unknown part of a sum is unknown, never zero).
   */
  addUsage(report: UsageReport): void;
}

export type TaskFn<K extends JobKind = JobKind> = (job: Job<K>, helpers: TaskHelpers) => Promise<TaskResult>;

export interface TaskDefinition<K extends JobKind = JobKind> {
  kind: K;
  run: TaskFn<K>;
}

/**
 * What a runner takes: a task of one kind (`defineTask("answer", …)`), or one task for several kinds (its job is
 * then the wider Job). The runner hands each job to the task of its kind, so the task only ever sees its own.
 */
export type AnyTaskDefinition = TaskDefinition | { [K in JobKind]: TaskDefinition<K> }[JobKind];

/** Runs `task` on `job`, whose kind the runner matched to the task's. */
export function runTask(task: AnyTaskDefinition, job: Job, helpers: TaskHelpers): Promise<TaskResult> {
  return (task.run as TaskFn)(job, helpers);
}

export function defineTask<K extends JobKind>(kind: K, run: TaskFn<K>): TaskDefinition<K> {
  return { kind, run };
}

/** A task that cannot succeed on a retry (bad input, a refused model): the runner fails it as not retryable. */
export class PermanentTaskError extends Error {
  override readonly name = "PermanentTaskError";
  constructor(
    /** The `error_code` the job is failed with (1..100 characters). */
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}
