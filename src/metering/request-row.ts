import type { RequestLogRow, UsageSource } from "../analytics/types.js";
import { formatUsd } from "../billing/usd.js";
import { ERROR_CODES, type ErrorCode } from "../errors.js";
import type { Target, UsageReport } from "../providers/types.js";
import type { ApiKeyPrincipal } from "../auth/principals.js";
import { identifierProblem } from "@model-gateway/worker-kit/wire/text";
import type { Pricing } from "./pricing.js";

// The request-log row of a request, built in one place whether it was refused before metering, failed, or was
// settled. Never payloads, keys, IPs or upstream text: ids, routing, counts, timings, the gateway's own code.

/** What is known of a request when it arrives. */
export interface RowStart {
  requestId: string;
  route: string;
  clientProtocol: string;
  key: ApiKeyPrincipal;
  /** The model ID the client sent ("" when it named none, or none a valid request could hold: namedModel). */
  modelId: string;
  /** performance.now() when the request arrived. */
  startedAt: number;
  streamed: boolean;
}

/**
 * The model a request named before its checks refused it, as its row keeps it: a string a valid request could have
 * held (non-empty, at most IDENTIFIER_MAX_CHARS, storable text), exactly as a valid request's row would; anything
 * else (a number, an object, a pasted document) is "" and nothing of it is kept.
 */
export function namedModel(named: unknown): string {
  return typeof named === "string" && named !== "" && identifierProblem(named) === undefined ? named : "";
}

/** The `model` member of a parsed JSON body, whatever it holds; undefined when the body is not an object. */
export function bodyModel(raw: unknown): unknown {
  return raw !== null && typeof raw === "object" && !Array.isArray(raw) ? (raw as Record<string, unknown>).model : undefined;
}

/** How it ended. */
export interface RowOutcome {
  status: number;
  code: ErrorCode | null;
  usage: UsageReport | null;
  charged: bigint;
  source: UsageSource;
  /** Who answered (null: nobody did), and who was tried before. */
  target: Target | null;
  fallbackPath: string[];
  /** Null for a request refused before it was priced. */
  pricing: Pricing | null;
  /** performance.now() of the first byte delivered, and of the end. */
  firstByteAt: number | undefined;
  endedAt: number;
  /** The wall clock at `endedAt`. */
  now: Date;
}

/** The outcome of a request answered without a hold: refused before metering, or served from elsewhere (a cache). */
export function unmeteredOutcome(status: number, code: ErrorCode | null, endedAt: number, now: Date): RowOutcome {
  return {
    status,
    code,
    usage: null,
    charged: 0n,
    source: "none",
    target: null,
    fallbackPath: [],
    pricing: null,
    firstByteAt: undefined,
    endedAt,
    now,
  };
}

/** The outcome of a settled request whose charge was withdrawn before it could commit: a 503, nothing charged. */
export function withdrawnOutcome(settled: RowOutcome): RowOutcome {
  return {
    status: 503,
    code: "database_unavailable",
    usage: settled.usage,
    charged: 0n,
    source: settled.source,
    target: settled.target,
    fallbackPath: settled.fallbackPath,
    pricing: settled.pricing,
    firstByteAt: undefined,
    endedAt: settled.endedAt,
    now: settled.now,
  };
}

const round = (ms: number) => Math.round(ms * 1000) / 1000;

/** The upstream cost estimate; a pricing that throws leaves it unknown rather than losing the row. */
function upstreamCost(o: RowOutcome): string | null {
  if (!o.usage || !o.target || !o.pricing) return null;
  try {
    return o.pricing.upstreamCost(o.usage, o.target);
  } catch {
    return null;
  }
}

export function requestRow(start: RowStart, o: RowOutcome): RequestLogRow {
  const paysInUsd = o.pricing?.account === "reseller_usd";
  const latencyMs = round(o.endedAt - start.startedAt);
  return {
    requestId: start.requestId,
    userId: start.key.userId,
    keyId: start.key.keyId,
    route: start.route,
    clientProtocol: start.clientProtocol,
    publicModel: start.modelId,
    upstreamModel: o.target?.upstreamModel ?? null,
    provider: o.target?.providerId ?? null,
    fallbackPath: o.fallbackPath,
    status: o.status,
    errorClass: o.code === null ? null : ERROR_CODES[o.code].class,
    errorCode: o.code,
    inputTokens: o.usage?.promptTokens ?? 0,
    outputTokens: o.usage?.completionTokens ?? 0,
    cachedTokens: o.usage?.cachedTokens ?? 0,
    // The day's quota units only: a pack's request (one request on its pack) and a reseller's USD are not.
    quotaCharged: o.pricing?.account === "request_pack" || paysInUsd ? 0n : o.charged,
    costUsd: paysInUsd && o.source !== "none" ? formatUsd(o.charged) : null,
    upstreamCostUsd: upstreamCost(o),
    usageSource: o.source,
    gptImageUsageFallback: o.usage?.image?.kind === "fallback" ? o.usage.image.reason : null,
    latencyMs,
    ttfbMs: o.firstByteAt === undefined ? null : round(o.firstByteAt - start.startedAt),
    streamed: start.streamed,
    receivedAt: new Date(o.now.getTime() - latencyMs),
    createdAt: o.now,
  };
}
