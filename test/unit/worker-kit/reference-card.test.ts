import { describe, expect, it } from "vitest";
import { cardSchema, completeRequestSchema, evidenceSchema } from "../../../worker-kit/wire/support.js";
import { buildCard, REQUEST_EVIDENCE_ID } from "../../../worker-kit/reference/card.js";
import { facts } from "./reference-fixtures.js";

// The card is the gateway's own facts restated: it must pass the wire schema the complete route validates with,
// and every fact must cite evidence of the same completion.
function expectValid(built: ReturnType<typeof buildCard>) {
  expect(cardSchema.safeParse(built.card).error).toBeUndefined();
  for (const item of built.evidence) expect(evidenceSchema.safeParse(item).error).toBeUndefined();
  const ids = new Set(built.evidence.map((e) => e.id));
  for (const fact of built.card.facts) for (const id of fact.evidence_ids) expect(ids.has(id)).toBe(true);
  const body = { lease_token: "t", revision: 1, content: "x", card: built.card, evidence: built.evidence, disposition: "answer" };
  const usage = { model_calls: 1, tool_calls: 0, input_tokens: 1, output_tokens: 1, cost_usd: null };
  expect(completeRequestSchema.safeParse({ ...body, usage }).error).toBeUndefined();
}

describe("buildCard", () => {
  it("cites the request facts as one evidence item and diagnoses by the error class", () => {
    const built = buildCard(facts());
    expectValid(built);
    expect(built.evidence).toEqual([{ id: REQUEST_EVIDENCE_ID, kind: "request_facts", content: facts() }]);
    expect(built.card.problem).toBe(
      "Request req_abc123 to /v1/chat/completions (model demo-small) failed with status 502 (upstream_error): " +
        "upstream_error: the upstream provider failed to give a valid answer.",
    );
    expect(built.card.facts).toContainEqual({
      field: "status",
      value: 502,
      evidence_ids: ["request"],
      request_id: "req_abc123",
      observed_at: "2026-01-02T03:04:05.012Z",
    });
    expect(built.card.facts.map((f) => f.field)).toEqual([
      "status",
      "error_code",
      "error_class",
      "model",
      "route",
      "streamed",
      "latency_ms",
      "quota_charged",
    ]);
    expect(built.card.hypotheses[0]).toMatch(/upstream provider failed/);
    expect(built.card.missing).toEqual([]);
    expect(built.card.confidence).toBe(0.5);
  });

  it("tells a quota failure from an authentication failure", () => {
    const quota = buildCard(facts({ status: 429, error_code: "quota_exceeded", error_class: "quota_exceeded" })).card;
    const auth = buildCard(facts({ status: 401, error_code: "invalid_api_key", error_class: "authentication" })).card;
    expect(quota.next_step).toMatch(/00:00 UTC/);
    expect(auth.hypotheses[0]).toMatch(/API key/);
    expect(quota.next_step).not.toBe(auth.next_step);
  });

  it("says what is missing when only the status was logged", () => {
    const statusOnly = facts({
      status: 503,
      error_code: null,
      error_class: null,
      error_detail_available: false,
      error_summary_source: "status_fallback",
      error_summary: "HTTP 503: the service was temporarily unavailable.",
    });
    const built = buildCard(statusOnly);
    expectValid(built);
    expect(built.card.missing).toEqual(["The gateway's error code (only the status was logged)."]);
    expect(built.card.problem).toContain("failed with status 503: HTTP 503");
  });

  it("describes a success without inventing an error", () => {
    const ok = facts({
      status: 200,
      error_code: null,
      error_class: null,
      error_summary_source: "none",
      error_summary: null,
      error_detail_available: false,
    });
    const built = buildCard(ok);
    expectValid(built);
    expect(built.card.problem).toMatch(/succeeded with status 200\.$/);
    expect(built.card.missing).toEqual([]);
  });

  it("leaves out an observed time that is no time", () => {
    const built = buildCard(facts({ completed_at: "not a time" }));
    expectValid(built);
    expect(built.card.facts[0]).not.toHaveProperty("observed_at");
  });

  it("fills `missing` for a job without facts, and cites nothing", () => {
    const built = buildCard(null);
    expectValid(built);
    expect(built.evidence).toEqual([]);
    expect(built.card.facts).toEqual([]);
    expect(built.card.missing).toEqual(["The X-Request-Id of the failing request (every gateway answer carries one)."]);
    expect(built.card.confidence).toBe(0);
  });
});
