import type { RequestFacts } from "@model-gateway/worker-kit/wire/support";

// A request-log row → the facts a support case snapshots (docs/support.md, "Request facts"). Pure. The log holds
// no payloads, IPs, keys or upstream bodies to begin with; this mapping also leaves out what the log does hold
// but a user must not see: the upstream model, the provider, the fallback path, the key id and the upstream
// cost. Each field is copied by name, so a column added to the log never reaches a case by accident.

/** The request_logs columns the facts read, as node-postgres returns them. */
export interface RequestLogFactsRow {
  request_id: string;
  route: string;
  client_protocol: string | null;
  public_model: string;
  status: number;
  error_code: string | null;
  error_class: string | null;
  streamed: boolean;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  /** bigint as text (node-postgres's default for int8). */
  quota_charged: string;
  cost_usd: string | null;
  /** latency_ms as text (numeric). */
  latency_ms: string;
  received_at: Date | null;
  created_at: Date;
}

/** What an error class says in words, for a summary of a row that has the gateway's error code. */
const CLASS_SUMMARIES: Record<string, string> = {
  invalid_request: "the gateway refused the request as invalid",
  authentication: "the API key was missing or invalid",
  permission: "the key or plan does not allow this request",
  not_found: "the model or route was not found",
  quota_exceeded: "the quota or balance was exhausted",
  rate_limited: "a rate limit was hit",
  context_limit: "the request exceeded the plan's context limit",
  upstream_error: "the upstream provider failed to give a valid answer",
  upstream_timeout: "the upstream provider did not answer in time",
  upstream_unreachable: "the upstream provider could not be reached",
  client_cancelled: "the client closed the connection before the answer ended",
  unavailable: "the gateway was temporarily unavailable",
  internal: "the gateway hit an internal error",
};

/** What a bare status says, when the row has no error code (rows written before the column existed). */
const STATUS_SUMMARIES: Record<number, string> = {
  400: "the request was refused as invalid",
  401: "the credentials were refused",
  403: "access was denied",
  404: "something the request named was not found",
  413: "the request body was too large",
  422: "the request was refused as invalid",
  429: "a quota or rate limit was hit",
  499: "the client closed the connection before the answer ended",
  500: "the gateway hit an internal error",
  502: "no valid answer came from upstream",
  503: "the service was temporarily unavailable",
  504: "the upstream did not answer in time",
  529: "the upstream was overloaded",
};

function statusSummary(status: number): string {
  const known = STATUS_SUMMARIES[status];
  if (known) return `HTTP ${status}: ${known}.`;
  return status >= 500 ? `HTTP ${status}: a server-side failure.` : `HTTP ${status}: the request was refused.`;
}

function errorSummary(row: RequestLogFactsRow): Pick<RequestFacts, "error_detail_available" | "error_summary_source" | "error_summary"> {
  if (row.status < 400 && row.error_code === null) {
    return { error_detail_available: false, error_summary_source: "none", error_summary: null };
  }
  if (row.error_code === null) {
    return { error_detail_available: false, error_summary_source: "status_fallback", error_summary: statusSummary(row.status) };
  }
  const said = (row.error_class && CLASS_SUMMARIES[row.error_class]) ?? "the request failed";
  return {
    error_detail_available: true,
    error_summary_source: "error_code",
    error_summary: `HTTP ${row.status} ${row.error_code}: ${said}.`,
  };
}

export function requestFacts(row: RequestLogFactsRow): RequestFacts {
  const summary = errorSummary(row);
  return {
    request_id: row.request_id,
    route: row.route,
    client_protocol: row.client_protocol ?? "",
    model: row.public_model,
    status: row.status,
    error_code: row.error_code,
    error_class: row.error_class,
    error_detail_available: summary.error_detail_available,
    error_summary_source: summary.error_summary_source,
    error_summary: summary.error_summary,
    streamed: row.streamed,
    input_tokens: row.input_tokens,
    output_tokens: row.output_tokens,
    cached_tokens: row.cached_tokens,
    quota_charged: Number(row.quota_charged),
    cost_usd: row.cost_usd,
    received_at: row.received_at === null ? null : row.received_at.toISOString(),
    completed_at: row.created_at.toISOString(),
    latency_ms: Number(row.latency_ms),
  };
}
