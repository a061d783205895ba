import type { Logger } from "pino";
import type { Target } from "../providers/types.js";
import { UpstreamError } from "../providers/types.js";

// The operator's view of upstream failures (docs/operations.md, "Upstream failures in the log"): one warn line
// per failed attempt and one per fallback, enough to tell a wrong base_url from a rejected provider key from an
// outage. Built only on the failure path. Never the upstream body, the request, a key or a URL with its path
// and query (the host alone names the endpoint; a base URL's userinfo or query could hold credentials).

/** Where the failed attempt stands in the request. */
export interface AttemptContext {
  requestId: string;
  /** The public model ID the client asked for. */
  modelId: string;
  /** 1 for the first target tried. */
  attempt: number;
  /** The next target, when one is tried after this failure. */
  next: Target | null;
  /** The request carried the client's own upstream key: a 401/403 is that key's rejection, not the provider's. */
  byok: boolean;
}

function hostOf(target: Target): string | null {
  try {
    return new URL(target.provider.base_url).host;
  } catch {
    return null;
  }
}

/** What the failure most likely means, in the operator's terms (the first thing to check). */
export function failureHint(err: UpstreamError, byok: boolean): string {
  if (err.failure === "status") {
    const status = err.status ?? 0;
    if (status === 401 || status === 403)
      return byok ? "the client's own upstream key was rejected" : "the provider rejected its api_key: check the key and its access";
    if (status === 404) return "the provider knows no such path or model: check base_url's path and the model's upstream name";
    if (status === 429) return "the provider is rate limiting";
    if (status >= 500) return "the provider failed on its side: an outage or overload";
    return "the provider refused the request";
  }
  switch (err.network) {
    case "connection_refused":
      return "nothing accepts connections at base_url's host and port: check base_url, or the provider is down";
    case "dns":
      return "base_url's host name does not resolve: check base_url";
    case "tls":
      return "the TLS handshake failed: check http vs https in base_url and the provider's certificate";
    case "connection_reset":
      return "the connection was cut: a provider outage, a proxy, or http vs https in base_url";
    case "network_unreachable":
      return "no route to base_url's host";
    case "connect_timeout":
      return "no connection within timeouts.connect_ms: a firewall, or the provider is down";
    case "first_byte_timeout":
      return "no answer within timeouts.first_byte_ms: the provider is slow or down";
    case "idle_timeout":
      return "the answer stalled for timeouts.idle_ms";
    default:
      break;
  }
  if (err.failure === "protocol") return "the answer is not what the provider's protocol defines: check protocol and base_url";
  if (err.failure === "too_large") return "the answer is over limits.upstream_answer_bytes";
  if (err.failure === "invalid_output") return "the answer failed the gateway's checks";
  return "the provider could not be reached";
}

/** The log line's message: the two failures documented under their own names keep them. */
function messageOf(err: UpstreamError): string {
  if (err.failure === "protocol") return "UPSTREAM_INVALID_ANSWER";
  if (err.failure === "too_large") return "UPSTREAM_ANSWER_TOO_LARGE";
  return "UPSTREAM_ATTEMPT_FAILED";
}

/** The fields of a failed attempt's line (pure: tested alone). */
export function attemptFailureFields(err: UpstreamError, target: Target, ctx: AttemptContext): Record<string, unknown> {
  return {
    req_id: ctx.requestId,
    provider: target.providerId,
    protocol: target.provider.protocol,
    upstream_host: hostOf(target),
    model: ctx.modelId,
    upstream_model: target.upstreamModel,
    attempt: ctx.attempt,
    failure: err.failure,
    upstream_status: err.status,
    error_class: err.failure === "status" ? null : (err.network ?? err.failure),
    // Why an answer was unusable names a rule, never upstream content.
    reason: err.failure === "protocol" || err.failure === "too_large" || err.failure === "invalid_output" ? err.message : undefined,
    byok: ctx.byok || undefined,
    fallback: ctx.next !== null,
    next_provider: ctx.next?.providerId,
    hint: failureHint(err, ctx.byok),
  };
}

/** Logs a stream that failed after it had begun: no fallback is possible any more, the client got an in-band error. */
export function logBrokenStream(logger: Logger, err: UpstreamError, target: Target, ctx: AttemptContext): void {
  if (err.failure === "aborted") return;
  logger.warn(attemptFailureFields(err, target, ctx), "UPSTREAM_STREAM_INTERRUPTED");
}

/** Logs a failed attempt (a client that went away is not an upstream failure) and the fallback that follows it. */
export function logFailedAttempt(logger: Logger, err: UpstreamError, target: Target, ctx: AttemptContext): void {
  if (err.failure === "aborted") return;
  logger.warn(attemptFailureFields(err, target, ctx), messageOf(err));
  if (ctx.next) {
    logger.warn(
      {
        req_id: ctx.requestId,
        model: ctx.modelId,
        from_provider: target.providerId,
        to_provider: ctx.next.providerId,
        attempt: ctx.attempt + 1,
        failure: err.failure,
        upstream_status: err.status,
      },
      "UPSTREAM_FALLBACK",
    );
  }
}
