import { describe, expect, it } from "vitest";
import { checkCompletionBody, judgeCompletion } from "../../src/support/worker-jobs/completion-rules.js";
import { hashLeaseToken, leaseTokenMatches, newLeaseToken } from "../../src/support/worker-jobs/lease-token.js";
import type { CompleteRequest } from "../../worker-kit/wire/support.js";

const open = { status: "open", staff_hold: false, revision: 3 } as const;
const answer = { kind: "answer", revision: 3 } as const;
const body = { revision: 3, disposition: "answer", content: "An answer." } as const;

describe("judgeCompletion", () => {
  it("publishes an answer at the case's revision", () => {
    expect(judgeCompletion(answer, body, open)).toBe("published");
  });

  it("tells a resolved case, then a hold, then a stale revision", () => {
    const everything = { status: "resolved", staff_hold: true, revision: 4 } as const;
    expect(judgeCompletion(answer, body, everything)).toBe("discarded_resolved");
    expect(judgeCompletion(answer, body, { status: "open", staff_hold: true, revision: 4 })).toBe("discarded_hold");
    expect(judgeCompletion(answer, body, { status: "open", staff_hold: false, revision: 4 })).toBe("discarded_stale");
  });

  it("is stale when the worker names another revision than the job's", () => {
    expect(judgeCompletion(answer, { revision: 2, disposition: "answer", content: "x" }, open)).toBe("discarded_stale");
  });

  it("lets drafts through a hold, and records what publishes nothing", () => {
    const held = { status: "open", staff_hold: true, revision: 3 } as const;
    expect(judgeCompletion({ kind: "staff_draft", revision: 3 }, body, held)).toBe("published");
    expect(judgeCompletion({ kind: "bug_draft", revision: 3 }, { revision: 3, disposition: "answer", content: " " }, open)).toBe(
      "recorded",
    );
    expect(judgeCompletion(answer, { revision: 3, disposition: "needs_staff", content: "" }, open)).toBe("recorded");
    expect(judgeCompletion(answer, { revision: 3, disposition: "no_answer", content: "" }, open)).toBe("recorded");
  });
});

describe("checkCompletionBody", () => {
  const request = (evidenceIds: string[], facts: string[][]): CompleteRequest => ({
    lease_token: "t",
    revision: 1,
    content: "c",
    card: {
      problem: "",
      facts: facts.map((ids) => ({ field: "f", value: null, evidence_ids: ids })),
      hypotheses: [],
      checks: [],
      missing: [],
      next_step: "",
      confidence: 0.5,
    },
    evidence: evidenceIds.map((id) => ({ id, kind: "k", content: null })),
    usage: { model_calls: 0, tool_calls: 0, input_tokens: 0, output_tokens: 0, cost_usd: null },
    disposition: "answer",
  });

  it("accepts facts citing submitted evidence, and none", () => {
    expect(() => checkCompletionBody(request(["a", "b"], [["a"], [], ["b", "a"]]))).not.toThrow();
  });

  it("names the first fact citing unknown evidence", () => {
    expect(() => checkCompletionBody(request(["a"], [["a"], ["c"]]))).toThrow(
      expect.objectContaining({ param: "card.facts[1].evidence_ids" }),
    );
  });

  it("names a duplicate evidence id", () => {
    expect(() => checkCompletionBody(request(["a", "a"], []))).toThrow(expect.objectContaining({ param: "evidence[1].id" }));
  });
});

describe("lease tokens", () => {
  it("match only their own hash", () => {
    const token = newLeaseToken();
    expect(token).toMatch(/^[\w-]{43}$/);
    expect(leaseTokenMatches(hashLeaseToken(token), token)).toBe(true);
    expect(leaseTokenMatches(hashLeaseToken(token), newLeaseToken())).toBe(false);
    expect(leaseTokenMatches(null, token)).toBe(false);
    expect(leaseTokenMatches("abcd", token)).toBe(false);
  });
});
