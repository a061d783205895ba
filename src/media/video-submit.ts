import { randomUUID } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import type { Ratio } from "../billing/ratio.js";
import { perSecondRate, videoHold } from "../billing/video-quota.js";
import type { Catalog } from "../catalog/catalog.js";
import type { Config } from "../config/schema.js";
import { backoffMs, type Backoff } from "../db/backoff.js";
import { isTransientDbError, readWithinDeadline } from "../db/faults.js";
import type { Pool } from "../db/pool.js";
import { errors } from "../errors.js";
import type { ApiKeyPrincipal } from "../auth/principals.js";
import { resolveModel, servingTargets } from "../catalog/model-access.js";
import { accountTerms } from "../metering/account-terms.js";
import { logFailedAttempt } from "../metering/attempt-log.js";
import { upstreamToClient } from "../metering/metered-errors.js";
import type { Metering } from "../metering/meter.js";
import type { RowStart } from "../metering/request-row.js";
import { pricingGroupMultiplier } from "../metering/pricing.js";
import type { Providers } from "../providers/registry.js";
import { UpstreamError, type Target, type VideoJobReport } from "../providers/types.js";
import { UpstreamAbort } from "../providers/upstream-abort.js";
import type { Clock } from "../time/clock.js";
import { HoldNotFoundError, type QuotaLedger } from "../quota/types.js";
import { VIDEO_CAPABILITIES, VIDEO_PROTOCOLS, videoUpstreamBody } from "./video-capabilities.js";
import { insertVideoJob, type VideoJobRow } from "./video-jobs.js";
import { VIDEO_ROUTE } from "./video-request-row.js";
import type { VideoRequest } from "./video-request-schema.js";

// Submitting a video job (docs/api.md, "Video"): resolve the model, hold the quota durably BEFORE any upstream
// call, submit with fallback (only until an upstream accepts: after that the job is that provider's), then store
// the job, due for its first poll by any serving process. Every failure after the hold voids it; every refusal is
// logged at once (one request-log row per request id; an accepted job's row is written when it ends,
// src/media/video-end.ts).
//
// Under a database fault the hold and the job's row are retried (each is idempotent by its id) within
// `database.request_timeout_ms`, as a request's charge is; past it the client gets 503 database_unavailable,
// nothing charged, and the hold is voided eventually: retried while the process runs, whatever became of the
// statements given up on. A job row stored late, its hold voided, ends as failed without a charge
// (video-end.ts, endingOf); an upstream job accepted and then given up is logged (VIDEO_JOB_ABANDONED).

export interface VideoDeps {
  config: Config;
  catalog: Catalog;
  providers: Providers;
  metering: Metering;
  ledger: QuotaLedger;
  pool: Pool;
  clock: Clock;
  /** Failed submissions and fallbacks are logged for the operator (src/metering/attempt-log.ts). */
  logger: Logger;
  /** Hears of the database faults a submission met (the database health). */
  onFault?: (err: unknown) => void;
}

/** The job the upstream accepted, as stored. */
export async function submitVideo(
  deps: VideoDeps,
  start: RowStart,
  key: ApiKeyPrincipal,
  request: VideoRequest,
  receivedAt: Date,
): Promise<VideoJobRow> {
  const { config, ledger, metering } = deps;
  const refuse = (err: unknown): never => {
    metering.logRejected(start, err);
    throw err;
  };
  let quote: VideoQuote;
  try {
    quote = quoteVideo(deps, key, request);
  } catch (err) {
    return refuse(err);
  }
  const { targets, bodies, amount } = quote;

  const jobId = randomUUID();
  const holdId = randomUUID();
  const now = deps.clock.now();
  const video = config.media.video;
  const withinDeadline = <T>(step: () => Promise<T>) => readWithinDeadline(config.database.request_timeout_ms, step, deps.onFault);
  let held: Awaited<ReturnType<QuotaLedger["reserveDurable"]>>;
  try {
    const expiresAt = new Date(now.getTime() + video.hold_expiry_seconds * 1000);
    held = await withinDeadline(() => reserveVideoHold(ledger, key, quote, { id: holdId, jobId, expiresAt }));
  } catch (err) {
    // The hold may have been taken by a statement whose answer never came.
    if (isTransientDbError(err)) void voidEventually(deps, holdId);
    return refuse(err);
  }
  if (!held.ok) return refuse(accountTerms.daily_allowance.refused(held, amount, now, undefined));

  let accepted: { target: Target; report: VideoJobReport };
  const fallbackPath: string[] = [];
  try {
    accepted = await submitWithFallback(deps, start.requestId, request.model, targets, bodies, fallbackPath);
  } catch (err) {
    await withinDeadline(() => ledger.voidDurable(holdId)).catch((fault: unknown) => {
      if (!isTransientDbError(fault)) throw fault;
      void voidEventually(deps, holdId);
    });
    return refuse(err instanceof UpstreamError ? upstreamToClient(err) : err);
  }
  const job = newJobRow({ jobId, holdId, key, start, request, quote, accepted, fallbackPath, receivedAt }, deps.clock.now(), video);
  try {
    await withinDeadline(() => insertVideoJob(deps.pool, job, video.poll_interval_seconds));
  } catch (err) {
    // Unstored, nothing would ever poll or settle the job: the client is told nothing was charged.
    deps.logger.warn(
      { job_id: jobId, request_id: start.requestId, provider: job.provider, upstream_job_id: job.upstreamJobId },
      "VIDEO_JOB_ABANDONED: the upstream accepted the job but it could not be stored; it is not billed",
    );
    void voidEventually(deps, holdId);
    return refuse(err);
  }
  return job;
}

/** What a submission the upstream accepted stores: the job, queued or in progress, on its durable hold. */
function newJobRow(
  s: {
    jobId: string;
    holdId: string;
    key: ApiKeyPrincipal;
    start: RowStart;
    request: VideoRequest;
    quote: VideoQuote;
    accepted: { target: Target; report: VideoJobReport };
    fallbackPath: string[];
    receivedAt: Date;
  },
  created: Date,
  video: Config["media"]["video"],
): VideoJobRow {
  const { key, start, request, quote, accepted } = s;
  return {
    id: s.jobId,
    userId: key.userId,
    keyId: key.keyId,
    requestId: start.requestId,
    publicModel: request.model,
    provider: accepted.target.providerId,
    upstreamModel: accepted.target.upstreamModel,
    upstreamJobId: accepted.report.id,
    fallbackPath: s.fallbackPath,
    // Whatever the upstream said first, the poll finds out the rest (a job already ended included).
    status: accepted.report.status === "in_progress" ? "in_progress" : "queued",
    holdId: s.holdId,
    held: quote.amount,
    seconds: quote.seconds,
    n: quote.n,
    rate: quote.rate,
    charged: null,
    videos: null,
    errorCode: null,
    receivedAt: s.receivedAt,
    createdAt: created,
    updatedAt: created,
    endedAt: null,
    deadline: new Date(created.getTime() + video.job_timeout_seconds * 1000),
  };
}

/** What a request for videos costs, and what each of its targets is sent. */
interface VideoQuote {
  targets: Target[];
  /** The upstream body for each target, in order. */
  bodies: Record<string, unknown>[];
  seconds: number;
  n: number;
  rate: Ratio;
  /** What is held: `n` videos of `seconds` each. */
  amount: bigint;
  dailyTokens: number;
  weeklyResets: number;
}

/** Resolves the model and prices the request; throws the client's error for one it cannot serve. */
function quoteVideo(deps: Pick<VideoDeps, "catalog" | "config">, key: ApiKeyPrincipal, request: VideoRequest): VideoQuote {
  const { config } = deps;
  const model = servingTargets(resolveModel(deps.catalog, config, key, request.model, "video"), VIDEO_PROTOCOLS, VIDEO_ROUTE, false);
  const price = model.config.video_price!;
  const seconds = request.duration ?? price.default_seconds;
  if (seconds > price.max_seconds) {
    throw errors.badRequest(
      `Invalid duration: the model '${request.model}' makes videos of at most ${price.max_seconds} seconds.`,
      "duration",
      "invalid_value",
    );
  }
  const targets = model.targets;
  const bodies = targets.map((t) => videoUpstreamBody(request, VIDEO_CAPABILITIES[t.provider.protocol]!, t.upstreamModel, seconds));
  const plan = Object.hasOwn(config.plans, key.plan) ? config.plans[key.plan] : undefined;
  if (!plan) throw errors.forbidden(`The plan '${key.plan}' of this account no longer exists; contact the operator.`, "plan_missing");
  const rate = perSecondRate({
    unitsPerSecond: price.units_per_second,
    tokenMultiplier: model.config.token_multiplier,
    groupMultiplier: pricingGroupMultiplier(config, key.pricingGroup),
  });
  const n = request.n ?? 1;
  const amount = videoHold(seconds, n, rate);
  return { targets, bodies, seconds, n, rate, amount, dailyTokens: plan.daily_tokens, weeklyResets: plan.weekly_resets };
}

/** The durable hold of a quoted job, named after the job. */
function reserveVideoHold(
  ledger: QuotaLedger,
  key: ApiKeyPrincipal,
  quote: VideoQuote,
  hold: { id: string; jobId: string; expiresAt: Date },
): ReturnType<QuotaLedger["reserveDurable"]> {
  return ledger.reserveDurable({
    kind: "daily_allowance",
    userId: key.userId,
    base: BigInt(quote.dailyTokens),
    planRevision: key.planRevision,
    id: hold.id,
    amount: quote.amount,
    reference: `video:${hold.jobId}`,
    expiresAt: hold.expiresAt,
    weeklyResets: BigInt(quote.weeklyResets),
  });
}

/** Pauses between attempts to void a hold: from 200 ms, doubling, up to 10 s. */
const VOID_RETRY: Backoff = { firstMs: 200, maxMs: 10_000 };

/**
 * Voids the hold whatever the database does meanwhile, retrying a transient fault while the process runs (a hold
 * left when it stops is voided by the expiry at its `expires_at`). A hold not found is looked for once more after
 * `database.query_timeout_ms`, by when a statement the client stopped waiting for has ended.
 */
async function voidEventually(deps: Pick<VideoDeps, "ledger" | "logger" | "config" | "onFault">, holdId: string): Promise<void> {
  let lookedAgain = false;
  for (let attempt = 0; ; attempt++) {
    try {
      await deps.ledger.voidDurable(holdId);
      return;
    } catch (err) {
      if (err instanceof HoldNotFoundError) {
        if (lookedAgain) return;
        lookedAgain = true;
        await sleep(deps.config.database.query_timeout_ms, undefined, { ref: false });
        continue;
      }
      if (!isTransientDbError(err)) {
        deps.logger.error({ hold_id: holdId, err: err instanceof Error ? err.message : String(err) }, "VIDEO_HOLD_VOID_FAILED");
        return;
      }
      deps.onFault?.(err);
      await sleep(backoffMs(attempt, VOID_RETRY), undefined, { ref: false });
    }
  }
}

/** Targets in order: the next after a retryable failure (connection, timeout, 429/5xx, an invalid answer). */
async function submitWithFallback(
  deps: Pick<VideoDeps, "providers" | "logger">,
  requestId: string,
  modelId: string,
  targets: Target[],
  bodies: Record<string, unknown>[],
  fallbackPath: string[],
): Promise<{ target: Target; report: VideoJobReport }> {
  let last = new UpstreamError("connect", null);
  for (const [i, target] of targets.entries()) {
    const adapter = deps.providers.get(target.providerId);
    try {
      if (!adapter?.videoSubmit) throw new UpstreamError("connect", null);
      const report = await adapter.videoSubmit(bodies[i]!, { target, signal: new UpstreamAbort() });
      return { target, report };
    } catch (err) {
      if (!(err instanceof UpstreamError)) throw err;
      last = err;
      fallbackPath.push(target.providerId);
      const next = err.retryable ? (targets[i + 1] ?? null) : null;
      logFailedAttempt(deps.logger, err, target, { requestId, modelId, attempt: i + 1, next, byok: false });
      if (!next) break;
    }
  }
  throw last;
}
