import { describe, expect, it } from "vitest";
import { completeRequestSchema, failRequestSchema } from "../../../worker-kit/wire/support.js";
import {
  cardJson,
  EMPTY_CARD,
  manualClaimRequest,
  manualCompleteRequest,
  manualFailRequest,
  nextDisposition,
  parseCardJson,
} from "../../../worker-kit/tui/state/manual-job.js";

describe("a job worked by hand", () => {
  it("cycles the disposition answer → needs_staff → no_answer → answer", () => {
    expect(nextDisposition("answer")).toBe("needs_staff");
    expect(nextDisposition("needs_staff")).toBe("no_answer");
    expect(nextDisposition("no_answer")).toBe("answer");
  });

  it("claims one job for five minutes as tui:<email>", () => {
    expect(manualClaimRequest("a@b.test")).toEqual({ limit: 1, lease_seconds: 300, worker_id: "tui:a@b.test" });
  });

  it("parses the edited card: valid, null, not JSON, or naming the invalid field", () => {
    expect(parseCardJson(cardJson(null))).toEqual({ ok: true, card: EMPTY_CARD });
    expect(parseCardJson("null")).toEqual({ ok: true, card: null });
    expect(parseCardJson("{ problem:")).toMatchObject({ ok: false, problem: expect.stringMatching(/^card: not JSON/) });
    expect(parseCardJson(JSON.stringify({ ...EMPTY_CARD, confidence: 2 }))).toEqual({
      ok: false,
      problem: "card.confidence: Too big: expected number to be <=1",
    });
    const badFact = { ...EMPTY_CARD, facts: [{ field: "status", value: 502 }] };
    expect(parseCardJson(JSON.stringify(badFact))).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/^card\.facts\.0\.evidence_ids: /),
    });
    expect(parseCardJson(JSON.stringify({ ...EMPTY_CARD, extra: 1 }))).toMatchObject({
      ok: false,
      problem: expect.stringMatching(/^card: /),
    });
  });

  it("completes and fails with requests the gateway's schemas accept, spending nothing", () => {
    const complete = manualCompleteRequest({ lease_token: "t", revision: 4 }, { content: "hi", card: EMPTY_CARD, disposition: "answer" });
    expect(completeRequestSchema.parse(complete)).toEqual(complete);
    expect(complete.usage).toEqual({ model_calls: 0, tool_calls: 0, input_tokens: 0, output_tokens: 0, cost_usd: "0" });
    expect(complete.evidence).toEqual([]);
    const fail = manualFailRequest("t", "manual_release", true);
    expect(failRequestSchema.parse(fail)).toEqual(fail);
  });
});
