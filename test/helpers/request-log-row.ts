import { randomUUID } from "node:crypto";
import type { RequestLogRow } from "../../src/analytics/types.js";
import { newRequestId } from "../../src/ids.js";

/**
 * A request-log row as the metering path writes one: a successful chat request of a new user, charged 30, created
 * now (or at `overrides.createdAt`, with a request id of that moment), with `overrides` on top.
 */
export function requestLogRow(overrides: Partial<RequestLogRow> = {}): RequestLogRow {
  const createdAt = overrides.createdAt ?? new Date();
  return {
    requestId: newRequestId(createdAt.getTime()),
    userId: randomUUID(),
    keyId: null,
    route: "/v1/chat/completions",
    clientProtocol: "openai",
    publicModel: "m1",
    upstreamModel: null,
    provider: "main",
    fallbackPath: [],
    status: 200,
    errorClass: null,
    errorCode: null,
    inputTokens: 10,
    outputTokens: 20,
    cachedTokens: 0,
    quotaCharged: 30n,
    costUsd: null,
    upstreamCostUsd: null,
    usageSource: "upstream",
    gptImageUsageFallback: null,
    latencyMs: 1.5,
    ttfbMs: null,
    streamed: false,
    receivedAt: createdAt,
    createdAt,
    ...overrides,
  };
}
