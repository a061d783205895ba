import type { ErrorClass } from "../analytics/types.js";
import { formatUsd } from "../billing/usd.js";
import { GatewayError, errors } from "../errors.js";
import { UpstreamError } from "../providers/types.js";

// Mapping of metering outcomes to client errors and coarse analytics classes. An upstream failure is told to
// the client by its status only: the upstream body never leaves the adapter.

export const meteringErrors = {
  modelNotFound: (model: string) =>
    new GatewayError({
      status: 404,
      type: "invalid_request_error",
      message: `The model '${model}' does not exist; GET /v1/models lists the IDs this key may use.`,
      code: "model_not_found",
      param: "model",
    }),
  wrongKind: (model: string, kind: string) =>
    errors.badRequest(`The model '${model}' is a ${kind} model and cannot be used on this route.`, "model", "model_not_supported"),
  modelForbidden: (model: string, why: "plan" | "key") =>
    new GatewayError({
      status: 403,
      type: "permission_error",
      message: `This ${why === "plan" ? "plan" : "API key"} may not use the model '${model}'.`,
      code: "model_not_allowed",
      param: "model",
    }),
  contextLimit: (tokens: number, limit: number, param: string | null) =>
    errors.badRequest(`The prompt is about ${tokens} tokens, over this plan's context limit of ${limit} tokens.`, param, "context_length_exceeded"),
  quotaExceeded: (used: bigint, allowance: bigint, resetsAt: Date) =>
    new GatewayError({
      status: 429,
      type: "rate_limit_error",
      message: `Daily quota exhausted: ${used} of ${allowance} units used today; it resets at ${resetsAt.toISOString()} (00:00 UTC).`,
      code: "insufficient_quota",
      headers: { "Retry-After": String(Math.max(1, Math.ceil((resetsAt.getTime() - Date.now()) / 1000))) },
    }),
  /** A reseller balance that cannot hold a request; it does not reset, so no Retry-After. */
  balanceExhausted: (availableNano: bigint, neededNano: bigint) =>
    new GatewayError({
      status: 429,
      type: "rate_limit_error",
      message: `Reseller balance exhausted: ${formatUsd(availableNano)} USD available, about ${formatUsd(neededNano)} USD held for this request; ask the operator to credit the balance.`,
      code: "insufficient_balance",
    }),
};

export function upstreamToClient(err: UpstreamError): GatewayError {
  const status = err.status;
  if (err.failure === "status" && status === 429) {
    return new GatewayError({
      status: 429,
      type: "rate_limit_error",
      message: "The upstream provider is rate limiting; retry after the indicated delay with exponential backoff.",
      code: "upstream_rate_limited",
      headers: err.retryHeaders,
    });
  }
  if (err.failure === "status" && status === 529) {
    return new GatewayError({
      status: 529,
      type: "overloaded_error",
      message: "The upstream provider is overloaded; retry after the indicated delay.",
      code: "upstream_overloaded",
      headers: err.retryHeaders,
    });
  }
  if (err.failure === "status" && (status === 400 || status === 422)) {
    return errors.badRequest(
      `The upstream provider rejected the request as invalid (${status}); check model-specific fields.`,
      null,
      "upstream_invalid_request",
    );
  }
  if (err.failure === "status" && status === 413) {
    return new GatewayError({ status: 413, type: "invalid_request_error", message: "The request is too large for the upstream provider.", code: "upstream_request_too_large" });
  }
  if (err.failure === "timeout") {
    return new GatewayError({ status: 504, type: "api_error", message: "The upstream provider did not answer in time.", code: "upstream_timeout" });
  }
  const what = err.failure === "status" ? `answered ${status}` : err.failure === "connect" ? "could not be reached" : "sent an invalid response";
  return new GatewayError({ status: 502, type: "api_error", message: `The upstream provider ${what}.`, code: "upstream_error" });
}

export function errorClassOf(err: unknown): ErrorClass {
  if (err instanceof UpstreamError) {
    if (err.failure === "timeout") return "upstream_timeout";
    if (err.failure === "connect") return "upstream_unreachable";
    if (err.failure === "aborted") return "client_cancelled";
    if (err.status === 429) return "rate_limited";
    return "upstream_error";
  }
  if (err instanceof GatewayError) {
    if (err.status === 499) return "client_cancelled";
    if (err.code === "insufficient_quota" || err.code === "insufficient_balance") return "quota_exceeded";
    if (err.code === "context_length_exceeded") return "context_limit";
    if (err.status === 401) return "authentication";
    if (err.status === 403) return "permission";
    if (err.status === 404) return "not_found";
    if (err.status === 429) return "rate_limited";
    if (err.status < 500) return "invalid_request";
    return "upstream_error";
  }
  return "internal";
}
