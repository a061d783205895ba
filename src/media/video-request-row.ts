import type { RequestLogRow } from "../analytics/types.js";
import { ERROR_CODES, type ErrorCode } from "../errors.js";
import type { VideoJobRow } from "./video-jobs.js";

// The request-log row of a video submission the upstream accepted, written once when its job ends (in the
// transaction that resolves its hold, on whichever process polled it, ./video-end.ts), so that it carries the
// charge: one row per request id, as for every route. A submission refused or failed before the upstream accepted
// it is logged at once by the route instead. Latency is the job's whole run (submission to end); ttfb is the time
// the submission took to be answered.

export const VIDEO_ROUTE = "/v1/video/generations";

export function videoRequestRow(
  job: VideoJobRow,
  end: { status: "completed" | "failed"; charged: bigint; code: ErrorCode | null; now: Date },
): RequestLogRow {
  const latencyMs = end.now.getTime() - job.receivedAt.getTime();
  const status = end.code === null ? 200 : ERROR_CODES[end.code].status;
  return {
    requestId: job.requestId,
    userId: job.userId,
    keyId: job.keyId,
    route: VIDEO_ROUTE,
    clientProtocol: "openai",
    publicModel: job.publicModel,
    upstreamModel: job.upstreamModel,
    provider: job.provider,
    fallbackPath: job.fallbackPath,
    status,
    errorClass: end.code === null ? null : ERROR_CODES[end.code].class,
    errorCode: end.code,
    inputTokens: 0,
    outputTokens: 0,
    cachedTokens: 0,
    quotaCharged: end.charged,
    costUsd: null,
    upstreamCostUsd: null,
    usageSource: end.status === "completed" ? "upstream" : "none",
    gptImageUsageFallback: null,
    latencyMs: Math.max(latencyMs, 0),
    ttfbMs: Math.max(job.createdAt.getTime() - job.receivedAt.getTime(), 0),
    streamed: false,
    receivedAt: job.receivedAt,
    createdAt: end.now,
  };
}
