import { randomUUID } from "node:crypto";
import type { Logger } from "pino";
import { perSecondRate, videoHold } from "../billing/video-quota.js";
import type { Catalog } from "../catalog/catalog.js";
import type { Config } from "../config/schema.js";
import type { Pool } from "../db/pool.js";
import { errors } from "../errors.js";
import type { ApiKeyPrincipal } from "../auth/principals.js";
import { resolveModel, servingTargets } from "../metering/access.js";
import { accountTerms } from "../metering/account-terms.js";
import { logFailedAttempt } from "../metering/attempt-log.js";
import { upstreamToClient } from "../metering/errors.js";
import type { Metering } from "../metering/meter.js";
import type { RowStart } from "../metering/request-row.js";
import { pricingGroupMultiplier } from "../metering/pricing.js";
import type { Providers } from "../providers/registry.js";
import { UpstreamError, type Target, type VideoJobReport } from "../providers/types.js";
import { UpstreamAbort } from "../providers/upstream-abort.js";
import type { Clock } from "../quota/clock.js";
import type { QuotaLedger } from "../quota/types.js";
import { VIDEO_CAPABILITIES, VIDEO_PROTOCOLS, videoUpstreamBody } from "./video-capabilities.js";
import { insertVideoJob, type VideoJobRow } from "./video-jobs.js";
import { VIDEO_ROUTE } from "./video-request-row.js";
import type { VideoRequest } from "./video-request-schema.js";

// Submitting a video job (docs/api.md, "Video"): resolve the model, hold the quota durably BEFORE any upstream
// call, submit with fallback (only until an upstream accepts: after that the job is that provider's), then store
// the job, due for its first poll by any serving process. Every failure after the hold voids it; every refusal is
// logged at once (one request-log row per request id; an accepted job's row is written when it ends,
// src/media/video-end.ts).

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
  let targets: Target[];
  let bodies: Record<string, unknown>[];
  let seconds: number;
  let amount: bigint;
  let rate: ReturnType<typeof perSecondRate>;
  let dailyTokens: number;
  let weeklyResets: number;
  try {
    const model = servingTargets(resolveModel(deps.catalog, config, key, request.model, "video"), VIDEO_PROTOCOLS, VIDEO_ROUTE, false);
    const price = model.config.video_price!;
    seconds = request.duration ?? price.default_seconds;
    if (seconds > price.max_seconds) {
      throw errors.badRequest(
        `Invalid duration: the model '${request.model}' makes videos of at most ${price.max_seconds} seconds.`,
        "duration",
        "invalid_value",
      );
    }
    targets = model.targets;
    bodies = targets.map((t) => videoUpstreamBody(request, VIDEO_CAPABILITIES[t.provider.protocol]!, t.upstreamModel, seconds));
    const plan = Object.hasOwn(config.plans, key.plan) ? config.plans[key.plan] : undefined;
    if (!plan) throw errors.forbidden(`The plan '${key.plan}' of this account no longer exists; contact the operator.`, "plan_missing");
    dailyTokens = plan.daily_tokens;
    weeklyResets = plan.weekly_resets;
    rate = perSecondRate({
      unitsPerSecond: price.units_per_second,
      tokenMultiplier: model.config.token_multiplier,
      groupMultiplier: pricingGroupMultiplier(config, key.pricingGroup),
    });
    amount = videoHold(seconds, request.n ?? 1, rate);
  } catch (err) {
    return refuse(err);
  }

  const jobId = randomUUID();
  const holdId = randomUUID();
  const now = deps.clock.now();
  const video = config.media.video;
  const held = await ledger.reserveDurable({
    kind: "daily_allowance",
    userId: key.userId,
    base: BigInt(dailyTokens),
    planRevision: key.planRevision,
    id: holdId,
    amount,
    reference: `video:${jobId}`,
    expiresAt: new Date(now.getTime() + video.hold_expiry_seconds * 1000),
    weeklyResets: BigInt(weeklyResets),
  });
  if (!held.ok) return refuse(accountTerms.daily_allowance.refused(held, amount, now, undefined));

  let accepted: { target: Target; report: VideoJobReport } | undefined;
  const fallbackPath: string[] = [];
  try {
    accepted = await submitWithFallback(deps, start.requestId, request.model, targets, bodies, fallbackPath);
    const created = deps.clock.now();
    const job: VideoJobRow = {
      id: jobId,
      userId: key.userId,
      keyId: key.keyId,
      requestId: start.requestId,
      publicModel: request.model,
      provider: accepted.target.providerId,
      upstreamModel: accepted.target.upstreamModel,
      upstreamJobId: accepted.report.id,
      fallbackPath,
      // Whatever the upstream said first, the poll finds out the rest (a job already ended included).
      status: accepted.report.status === "in_progress" ? "in_progress" : "queued",
      holdId,
      held: amount,
      seconds,
      n: request.n ?? 1,
      rate,
      charged: null,
      videos: null,
      errorCode: null,
      receivedAt,
      createdAt: created,
      updatedAt: created,
      endedAt: null,
      deadline: new Date(created.getTime() + video.job_timeout_seconds * 1000),
    };
    await insertVideoJob(deps.pool, job, video.poll_interval_seconds);
    return job;
  } catch (err) {
    // Nothing was accepted, or the job could not be stored (then nothing would ever poll or settle it).
    await ledger.voidDurable(holdId);
    return refuse(err instanceof UpstreamError ? upstreamToClient(err) : err);
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
