import type { ClaimedJob, RequestFacts } from "../../../worker-kit/wire/support.js";

/** Request facts as a case snapshots them; a failure by default. */
export function facts(overrides: Partial<RequestFacts> = {}): RequestFacts {
  return {
    request_id: "req_abc123",
    route: "/v1/chat/completions",
    client_protocol: "openai",
    model: "demo-small",
    status: 502,
    error_code: "upstream_error",
    error_class: "upstream_error",
    error_detail_available: true,
    error_summary_source: "error_code",
    error_summary: "upstream_error: the upstream provider failed to give a valid answer.",
    streamed: false,
    input_tokens: 0,
    output_tokens: 0,
    cached_tokens: 0,
    quota_charged: 0,
    cost_usd: null,
    received_at: "2026-01-02T03:04:05.000Z",
    completed_at: "2026-01-02 03:04:05.012+00",
    latency_ms: 12.5,
    ...overrides,
  };
}

export function job(kind: ClaimedJob["kind"], context: Partial<ClaimedJob["context"]> = {}): ClaimedJob {
  return {
    id: "7d1f0c5e-1b7a-4c1e-9e55-0a4c2f0e9b11",
    kind,
    case_id: "3c2b1a09-8f7e-4d6c-9b5a-493827160504",
    revision: 2,
    attempt: 1,
    lease_token: "lease",
    lease_expires_at: "2026-01-02T03:05:05.000Z",
    context: { locale: "de", facts: facts(), card: null, transcript: [], history_truncated: false, ...context },
  };
}
