import { randomUUID } from "node:crypto";
import { isTransientDbError } from "../db/faults.js";
import type { DatabaseHealth } from "../db/health.js";
import { UpstreamAbort } from "../providers/upstream-abort.js";
import { claimDueVideoJobs } from "./video-jobs.js";
import { pollVideoJob, type VideoPollDeps } from "./video-poll.js";

// Every serving process polls the video jobs that are due, whichever process took them (docs/api.md, "Video"): a
// job is a row of ours claimed for one poll with FOR UPDATE SKIP LOCKED under a short claim, so a process that dies
// strands nothing (its claims lapse, and jobs it never claimed are due for everyone), and nothing depends on
// graphile-worker running (`serve --no-worker` polls too), as with the ledger's expiry (src/quota/expiry-sweep.ts).

/** Jobs claimed at once, and polled concurrently: a batch ends within one poll's time, well inside its claim. */
const CLAIM_BATCH = 8;
/** How often a process looks for due jobs: a due job waits at most this long; an idle look is one indexed statement. */
const TICK_MS = 1_000;

export interface PollRound {
  claimed: number;
  /** Polls that threw: each job stays claimed until its claim lapses, then any process polls it again. */
  failed: { jobId: string; err: unknown }[];
}

export interface RoundOptions {
  /** Aborted when the process stops: upstream calls are cancelled, and an end is no longer retried. */
  stop?: AbortSignal;
  /** A transient database fault that a retry may cure. */
  onFault?(err: unknown): void;
}

/** Claims up to CLAIM_BATCH due jobs and polls each once. */
export async function pollDueVideoJobs(deps: VideoPollDeps, opts: RoundOptions = {}): Promise<PollRound> {
  const claimMs = deps.config.media.video.claim_seconds * 1000;
  const jobs = await claimDueVideoJobs(deps.pool, CLAIM_BATCH, deps.config.media.video.claim_seconds, randomUUID());
  if (jobs.length === 0) return { claimed: 0, failed: [] };
  const until = performance.now() + claimMs;
  const aborts = jobs.map(() => new UpstreamAbort());
  const cancel = () => {
    for (const abort of aborts) abort.abort();
  };
  // The upstream has half the claim to answer; the other half is for ending the job (and its retries).
  const timer = setTimeout(cancel, claimMs / 2);
  timer.unref();
  opts.stop?.addEventListener("abort", cancel);
  if (opts.stop?.aborted) cancel();
  try {
    const control = { until, stopping: () => opts.stop?.aborted ?? false, onFault: opts.onFault ?? (() => {}) };
    const polls = await Promise.allSettled(jobs.map((job, i) => pollVideoJob(deps, job, { ...control, signal: aborts[i]! })));
    const failed = polls.flatMap((p, i) => (p.status === "rejected" ? [{ jobId: jobs[i]!.id, err: p.reason as unknown }] : []));
    return { claimed: jobs.length, failed };
  } finally {
    clearTimeout(timer);
    opts.stop?.removeEventListener("abort", cancel);
  }
}

export interface VideoPoller {
  /** Cancels the polls in flight (their jobs are polled again later, by any process) and waits for them. */
  stop(): Promise<void>;
}

/** The poller of a serving process: a round every second, and at once again while rounds find full batches. */
export function startVideoPoller(deps: VideoPollDeps, health: DatabaseHealth): VideoPoller {
  const stopping = new AbortController();
  const onFault = (err: unknown) => health.failed(err, "video poll");
  const report = (err: unknown, jobId?: string) => {
    if (isTransientDbError(err)) onFault(err);
    else deps.logger.warn({ job_id: jobId, err: err instanceof Error ? err.message : String(err) }, "VIDEO_POLL_ERROR: polled again later");
  };
  async function rounds(): Promise<void> {
    while (!stopping.signal.aborted) {
      let round: PollRound;
      try {
        round = await pollDueVideoJobs(deps, { stop: stopping.signal, onFault });
      } catch (err) {
        report(err);
        return;
      }
      health.ok();
      for (const { jobId, err } of round.failed) report(err, jobId);
      // A full batch: more jobs may be due already.
      if (round.claimed < CLAIM_BATCH) return;
    }
  }
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  const next = () => {
    timer = setTimeout(() => {
      running = rounds().finally(() => {
        running = undefined;
        if (!stopping.signal.aborted) next();
      });
    }, TICK_MS);
    timer.unref();
  };
  next();
  return {
    async stop() {
      stopping.abort();
      clearTimeout(timer);
      await running;
    },
  };
}
