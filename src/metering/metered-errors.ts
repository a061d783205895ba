import { formatUsd } from "../billing/usd.js";
import { GatewayError, errors, type ErrorClass, type ErrorCode } from "../errors.js";
import { UpstreamAnswerTooLargeError, UpstreamError } from "../providers/types.js";
import { modelAccessErrors, UPSTREAM_KEY_HEADER_NAME } from "../catalog/model-access-errors.js";

// Mapping of metering outcomes to client errors and coarse analytics classes. An upstream failure is told to
// the client by its status only: the upstream body never leaves the adapter.

export { UPSTREAM_KEY_HEADER_NAME };

/** Every error a metered route can answer besides those of its credential and body (the API description's list). */
export const METERED_ERROR_CODES = [
  "model_not_found",
  "model_not_supported",
  "model_not_allowed",
  "model_not_priced",
  "plan_missing",
  "context_length_exceeded",
  "insufficient_quota",
  "insufficient_balance",
  "invalid_upstream_key",
  "upstream_key_not_accepted",
  "upstream_key_rejected",
  "upstream_invalid_request",
  "upstream_request_too_large",
  "upstream_rate_limited",
  "upstream_error",
  "upstream_invalid_output",
  "upstream_answer_too_large",
  "upstream_stream_interrupted",
  "upstream_unreachable",
  "upstream_timeout",
  "upstream_overloaded",
] as const satisfies readonly ErrorCode[];

export const meteringErrors = {
  /** The catalog's own (src/catalog/model-access-errors.ts): the model lists' lookups answer it too. */
  modelNotFound: modelAccessErrors.modelNotFound,
  contextLimit: (tokens: number, limit: number, param: string | null) =>
    errors.badRequest(
      `The prompt is about ${tokens} tokens, over this plan's context limit of ${limit} tokens.`,
      param,
      "context_length_exceeded",
    ),
  quotaExceeded: (used: bigint, allowance: bigint, resetsAt: Date, now: Date) =>
    new GatewayError({
      message: `Daily quota exhausted: ${used} of ${allowance} units used today; it resets at ${resetsAt.toISOString()} (00:00 UTC).`,
      code: "insufficient_quota",
      headers: { "Retry-After": String(Math.max(1, Math.ceil((resetsAt.getTime() - now.getTime()) / 1000))) },
    }),
  /** A model's request pack spent for the day (docs/billing.md, "Request packs"). */
  packExhausted: (model: string, used: bigint, allowance: bigint, resetsAt: Date, now: Date) =>
    new GatewayError({
      message: `Request pack exhausted: ${used} of ${allowance} requests of the model '${model}' used today; it renews at ${resetsAt.toISOString()} (00:00 UTC).`,
      code: "insufficient_quota",
      headers: { "Retry-After": String(Math.max(1, Math.ceil((resetsAt.getTime() - now.getTime()) / 1000))) },
    }),
  /** A reseller balance that cannot hold a request; it does not reset, so no Retry-After. */
  balanceExhausted: (availableNano: bigint, neededNano: bigint) =>
    new GatewayError({
      message: `Reseller balance exhausted: ${formatUsd(availableNano)} USD available, about ${formatUsd(neededNano)} USD held for this request; ask the operator to credit the balance.`,
      code: "insufficient_balance",
    }),
};

/** With the client's own upstream key, an upstream 401 or 403 is that key's rejection. */
const rejectsClientKey = (err: UpstreamError, byok: boolean) =>
  byok && err.failure === "status" && (err.status === 401 || err.status === 403);

/**
 * The client's view of an upstream failure. With the client's own upstream key (`byok`), a 401 or 403 is that
 * key's rejection: the client's to fix, so a 400, never the 401 that means an invalid gateway key and never the
 * 502 that tells the operator its own credentials are wrong.
 */
export function upstreamToClient(err: UpstreamError, byok = false): GatewayError {
  const status = err.status;
  if (rejectsClientKey(err, byok)) {
    return errors.badRequest(
      `The upstream provider rejected the key sent in ${UPSTREAM_KEY_HEADER_NAME} (${status}); check that key and its access to this model.`,
      null,
      "upstream_key_rejected",
    );
  }
  if (err.failure === "status" && status === 429) {
    return new GatewayError({
      message: "The upstream provider is rate limiting; retry after the indicated delay with exponential backoff.",
      code: "upstream_rate_limited",
      headers: err.retryHeaders,
    });
  }
  if (err.failure === "status" && status === 529) {
    return new GatewayError({
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
    return new GatewayError({ message: "The request is too large for the upstream provider.", code: "upstream_request_too_large" });
  }
  if (err instanceof UpstreamAnswerTooLargeError) {
    // The cap is the operator's setting, so naming it tells nothing about the upstream; its text is never relayed.
    return new GatewayError({
      message: `The upstream provider's answer is larger than this gateway accepts for this kind of request (${err.limitBytes} bytes); ask for less output, or ask the operator to raise limits.upstream_answer_bytes.`,
      code: "upstream_answer_too_large",
    });
  }
  if (err.failure === "timeout") {
    return new GatewayError({ message: "The upstream provider did not answer in time.", code: "upstream_timeout" });
  }
  if (err.failure === "connect")
    return new GatewayError({ message: "The upstream provider could not be reached.", code: "upstream_unreachable" });
  if (err.failure === "invalid_output") {
    return new GatewayError({
      message: "The upstream provider's output failed the gateway's checks; nothing more was generated for this request.",
      code: "upstream_invalid_output",
    });
  }
  const what = err.failure === "status" ? `answered ${status}` : "sent an invalid response";
  return new GatewayError({ message: `The upstream provider ${what}.`, code: "upstream_error" });
}

/** The gateway's code for a failure: its own, or the client's wording of an upstream failure. */
export function errorCodeOf(err: unknown, byok = false): ErrorCode {
  if (err instanceof GatewayError) return err.code;
  if (err instanceof UpstreamError) return err.failure === "aborted" ? "client_closed_request" : upstreamToClient(err, byok).code;
  return "internal_error";
}

/** The class of a failure (error-codes table); with the client's own upstream key (`byok`) as upstreamToClient words it. */
export function errorClassOf(err: unknown, byok = false): ErrorClass {
  if (err instanceof UpstreamError) return err.failure === "aborted" ? "client_cancelled" : upstreamToClient(err, byok).errorClass;
  if (err instanceof GatewayError) return err.errorClass;
  return "internal";
}
