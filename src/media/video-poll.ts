import type { Logger } from "pino";
import { encodeRow } from "../analytics/row-json.js";
import { videoCharge } from "../billing/video-quota.js";
import type { Config } from "../config/schema.js";
import type { ErrorCode } from "../errors.js";
import { upstreamToClient } from "../metering/errors.js";
import type { Providers } from "../providers/registry.js";
import { UpstreamError, type VideoJobReport } from "../providers/types.js";
import { UpstreamAbort } from "../providers/upstream-abort.js";
import type { Clock } from "../quota/clock.js";
import { HoldResolvedError, type QuotaLedger } from "../quota/types.js";
import type { Pool } from "../db/pool.js";
import { endVideoJob, findVideoJob, setVideoJobStatus, type VideoJobRow } from "./video-jobs.js";
import { videoRequestRow } from "./video-request-row.js";

// One poll of one video job (the `poll_video` task, src/jobs/tasks.ts). Delivery is at least once and any
// process may run it, twice at once even, or die half-way; every step is therefore safe to repeat:
//   1. the ledger resolves the durable hold: postDurable / voidDurable are idempotent by hold id (a second post
//      returns the first outcome, so its charge is the one recorded);
//   2. one statement ends the job row and writes the request-log row, only if the job was still running.
// A process killed between 1 and 2 leaves a running row with a resolved hold: the next run (the task is retried
// by graphile-worker) repeats 1 with no second effect and does 2.

export interface VideoPollDeps {
  pool: Pool;
  ledger: QuotaLedger;
  providers: Providers;
  config: Config;
  clock: Clock;
  logger: Logger;
}

/** Schedules the next poll of a job (graphile-worker's addJob under the job's key). */
export type ScheduleNextPoll = (jobId: string, runAt: Date) => Promise<void>;

export type PollOutcome = "missing" | "ended" | "running";

export async function pollVideoJob(deps: VideoPollDeps, jobId: string, scheduleNext: ScheduleNextPoll): Promise<PollOutcome> {
  const job = await findVideoJob(deps.pool, jobId);
  if (!job) return "missing";
  if (job.status === "completed" || job.status === "failed") return "ended";
  const now = deps.clock.now();
  const provider = Object.hasOwn(deps.config.providers, job.provider) ? deps.config.providers[job.provider] : undefined;
  const adapter = deps.providers.get(job.provider);
  if (!provider || !adapter?.videoStatus) {
    // The provider left the config: nobody can ask about the job any more.
    await fail(deps, job, "upstream_unreachable");
    return "ended";
  }
  // Asked even past the deadline: a job that completed meanwhile is delivered and charged, never voided.
  let report: VideoJobReport | null = null;
  try {
    const target = { providerId: job.provider, provider, upstreamModel: job.upstreamModel };
    report = await adapter.videoStatus(job.upstreamJobId, { target, signal: new UpstreamAbort() });
  } catch (err) {
    if (!(err instanceof UpstreamError)) throw err;
    // Not retryable (a 4xx: the upstream does not know the job, or refuses the key): the job cannot end well.
    if (!err.retryable) {
      await fail(deps, job, upstreamToClient(err).code);
      return "ended";
    }
    // A status the upstream may answer otherwise later (429, 5xx, a timeout, an invalid answer): poll again.
    deps.logger.warn({ job_id: job.id, provider: job.provider, failure: err.failure, status: err.status }, "VIDEO_POLL_FAILED");
  }
  if (report?.status === "completed") {
    await complete(deps, job, report);
    return "ended";
  }
  if (report?.status === "failed") {
    await fail(deps, job, "upstream_error");
    return "ended";
  }
  if (now >= job.deadline) {
    await fail(deps, job, "upstream_timeout");
    return "ended";
  }
  if (report) await setVideoJobStatus(deps.pool, job.id, report.status, now);
  await scheduleNext(job.id, next(deps, now));
  return "running";
}

const next = (deps: VideoPollDeps, now: Date) => new Date(now.getTime() + deps.config.media.video.poll_interval_seconds * 1000);

async function complete(deps: VideoPollDeps, job: VideoJobRow, report: VideoJobReport): Promise<void> {
  const charge = videoCharge(
    report.videos.map((v) => v.durationSeconds),
    job.seconds,
    job.rate,
  );
  let charged: bigint;
  try {
    const hold = await deps.ledger.postDurable(job.holdId, charge);
    // A second run gets the first outcome: the charge the ledger holds is the one recorded.
    charged = hold.charged ?? charge;
  } catch (err) {
    // Voided meanwhile (the job timed out on another run): that run ends the job as failed.
    if (err instanceof HoldResolvedError) return endAs(deps, job, "failed", 0n, null, "upstream_timeout");
    throw err;
  }
  const videos = report.videos.map((v) => ({ url: v.url, duration: v.durationSeconds }));
  await endAs(deps, job, "completed", charged, videos, null);
}

async function fail(deps: VideoPollDeps, job: VideoJobRow, code: ErrorCode): Promise<void> {
  // A posted hold (a run saw the job complete) throws HoldResolvedError: graphile-worker retries the task, and
  // the next run, which polls first, finds the job completed and ends it as such.
  await deps.ledger.voidDurable(job.holdId);
  await endAs(deps, job, "failed", 0n, null, code);
}

function endAs(
  deps: VideoPollDeps,
  job: VideoJobRow,
  status: "completed" | "failed",
  charged: bigint,
  videos: { url: string; duration: number | null }[] | null,
  code: ErrorCode | null,
): Promise<void> {
  const now = deps.clock.now();
  const record = encodeRow(videoRequestRow(job, { status, charged, code, now }));
  return endVideoJob(deps.pool, job.id, { status, charged, videos, errorCode: code, now, record });
}
