import type { Logger } from "pino";
import { videoCharge } from "../billing/video-quota.js";
import type { Config } from "../config/schema.js";
import type { Pool } from "../db/pool.js";
import { upstreamToClient } from "../metering/metered-errors.js";
import type { Providers } from "../providers/registry.js";
import { UpstreamError, type VideoJobReport } from "../providers/types.js";
import type { UpstreamAbort } from "../providers/upstream-abort.js";
import type { Clock } from "../time/clock.js";
import { endVideoJobRetrying, type VideoVerdict } from "./video-end.js";
import { scheduleNextPoll, type ClaimedVideoJob } from "./video-jobs.js";

// One poll of one claimed video job (./video-poller.ts claims it): ask the upstream, then either end the job (one
// transaction with its hold and its request-log row, ./video-end.ts) or schedule its next poll under the claim.
// A poll may die anywhere: before the end's commit nothing has changed (the claim lapses and another process
// polls the job again), after it the job has ended.

export interface VideoPollDeps {
  pool: Pool;
  providers: Providers;
  config: Config;
  clock: Clock;
  logger: Logger;
  /** The journal's insert of request-log rows (src/runtime/services.ts): the log itself, or its outbox. */
  logRows: (param: string) => string;
}

export interface PollControl {
  /** Cancels the upstream call: the claim is running out, or the process is stopping. */
  signal: UpstreamAbort;
  /** When the claim lapses (performance.now()): the end's retries stop there. */
  until: number;
  stopping(): boolean;
  /** A transient database fault that a retry may cure (the process's database health hears of it). */
  onFault(err: unknown): void;
}

export async function pollVideoJob(deps: VideoPollDeps, job: ClaimedVideoJob, control: PollControl): Promise<void> {
  const answer = await ask(deps, job, control.signal);
  const now = deps.clock.now();
  // Past the deadline only when the upstream did not say the job ended: a job that completed meanwhile is
  // delivered and charged, never voided.
  const verdict = typeof answer === "object" && answer !== null ? answer : now >= job.deadline ? TIMED_OUT : null;
  if (!verdict) {
    const status = typeof answer === "string" ? answer : null;
    await scheduleNextPoll(deps.pool, job, status, now, deps.config.media.video.poll_interval_seconds);
    return;
  }
  const ended = await endVideoJobRetrying(deps.pool, job, verdict, now, { ...control, logRows: deps.logRows });
  if (ended && ended.status !== verdict.status) {
    // Only a hold that an earlier version resolved apart from its job row can differ from what the upstream said.
    deps.logger.warn({ job_id: job.id, seen: verdict.status, ended: ended.status }, "VIDEO_JOB_ENDED_AS_ITS_HOLD");
  }
}

const TIMED_OUT: VideoVerdict = { status: "failed", code: "upstream_timeout" };

/** The upstream's verdict on a job that ended; the status of one still running; null without an answer. */
async function ask(
  deps: VideoPollDeps,
  job: ClaimedVideoJob,
  signal: UpstreamAbort,
): Promise<VideoVerdict | "queued" | "in_progress" | null> {
  const provider = Object.hasOwn(deps.config.providers, job.provider) ? deps.config.providers[job.provider] : undefined;
  const adapter = deps.providers.get(job.provider);
  // The provider left the config: nobody can ask about the job any more.
  if (!provider || !adapter?.videoStatus) return { status: "failed", code: "upstream_unreachable" };
  let report: VideoJobReport;
  try {
    const target = { providerId: job.provider, provider, upstreamModel: job.upstreamModel };
    report = await adapter.videoStatus(job.upstreamJobId, { target, signal });
  } catch (err) {
    if (!(err instanceof UpstreamError)) throw err;
    // Not retryable (a 4xx: the upstream does not know the job, or refuses the key): the job cannot end well.
    // Cancelled by the poller (its claim ran out, or the process is stopping) is no answer: poll again.
    if (!err.retryable && !signal.aborted) return { status: "failed", code: upstreamToClient(err).code };
    // A status the upstream may answer otherwise later (429, 5xx, a timeout, an invalid answer): poll again.
    deps.logger.warn({ job_id: job.id, provider: job.provider, failure: err.failure, status: err.status }, "VIDEO_POLL_FAILED");
    return null;
  }
  if (report.status === "completed") {
    const charge = videoCharge(
      report.videos.map((v) => v.durationSeconds),
      job.seconds,
      job.rate,
    );
    const videos = report.videos.map(({ durationSeconds, ...location }) => ({ ...location, duration: durationSeconds }));
    return { status: "completed", charge, videos };
  }
  if (report.status === "failed") return { status: "failed", code: "upstream_error" };
  return report.status;
}
