import { describe, expect, it } from "vitest";
import { requestFacts, type RequestLogFactsRow } from "../../src/support/cases/request-facts.js";
import { requestFactsSchema } from "../../worker-kit/wire/support.js";

// A full request_logs row as `select *` would return it: the private columns are there, so the test proves the
// mapping leaves them out rather than never being offered them.
function fullRow(overrides: Record<string, unknown> = {}): RequestLogFactsRow {
  const row = {
    request_id: "req_abc",
    user_id: "6f1c1f6e-0d57-4a8e-9a43-7f4f3b1c2d11",
    key_id: "0b7e7c1a-3f0e-4a64-a0f2-11f0c0d0e0f0",
    route: "/v1/chat/completions",
    client_protocol: "openai",
    public_model: "m1",
    upstream_model: "secret-upstream-model-2024",
    provider: "secret-provider",
    fallback_path: ["secret-main", "secret-backup"],
    status: 200,
    error_class: null,
    error_code: null,
    input_tokens: 12,
    output_tokens: 34,
    cached_tokens: 2,
    quota_charged: "46",
    cost_usd: null,
    upstream_cost_usd: "0.000123",
    usage_source: "upstream",
    gpt_image_usage_fallback: null,
    latency_ms: "12.345",
    ttfb_ms: "3.500",
    streamed: true,
    received_at: new Date("2026-01-02T03:04:05.000Z"),
    created_at: new Date("2026-01-02T03:04:05.012Z"),
  };
  return Object.assign(row, overrides) as RequestLogFactsRow;
}

const PRIVATE = ["secret-upstream-model-2024", "secret-provider", "secret-main", "secret-backup", "0.000123", "0b7e7c1a", "6f1c1f6e"];

describe("requestFacts", () => {
  it("maps a success to facts with no error summary", () => {
    const facts = requestFacts(fullRow());
    expect(requestFactsSchema.parse(facts)).toEqual(facts);
    expect(facts).toEqual({
      request_id: "req_abc",
      route: "/v1/chat/completions",
      client_protocol: "openai",
      model: "m1",
      status: 200,
      error_code: null,
      error_class: null,
      error_detail_available: false,
      error_summary_source: "none",
      error_summary: null,
      streamed: true,
      input_tokens: 12,
      output_tokens: 34,
      cached_tokens: 2,
      quota_charged: 46,
      cost_usd: null,
      received_at: "2026-01-02T03:04:05.000Z",
      completed_at: "2026-01-02T03:04:05.012Z",
      latency_ms: 12.345,
    });
  });

  it("summarises an upstream failure from the gateway's code and never copies a private column", () => {
    const facts = requestFacts(
      fullRow({ status: 502, error_code: "upstream_error", error_class: "upstream_error", output_tokens: 0, quota_charged: "0" }),
    );
    // Strict: a key outside the schema fails the parse.
    requestFactsSchema.parse(facts);
    expect(facts).toMatchObject({
      error_detail_available: true,
      error_summary_source: "error_code",
      error_summary: "HTTP 502 upstream_error: the upstream provider failed to give a valid answer.",
    });
    const text = JSON.stringify(facts);
    for (const secret of PRIVATE) expect(text).not.toContain(secret);
    expect(Object.keys(facts).sort()).toEqual(Object.keys(requestFactsSchema.shape).sort());
  });

  it("falls back to the status alone when the row has no error code", () => {
    expect(requestFacts(fullRow({ status: 504 }))).toMatchObject({
      error_code: null,
      error_detail_available: false,
      error_summary_source: "status_fallback",
      error_summary: "HTTP 504: the upstream did not answer in time.",
    });
    expect(requestFacts(fullRow({ status: 418 })).error_summary).toBe("HTTP 418: the request was refused.");
    expect(requestFacts(fullRow({ status: 599 })).error_summary).toBe("HTTP 599: a server-side failure.");
  });

  it("keeps the client protocol empty when unknown and a pay-as-you-go charge exact", () => {
    const facts = requestFacts(fullRow({ client_protocol: null, received_at: null, cost_usd: "0.000000123" }));
    expect(facts.client_protocol).toBe("");
    expect(facts.received_at).toBeNull();
    expect(facts.cost_usd).toBe("0.000000123");
  });
});
