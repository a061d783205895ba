import { describe, expect, it } from "vitest";
import { claimText, completeText, failText } from "../../cli/support-text.js";

// The human text of `gateway support job`: short lines, with what the next command needs.
describe("support twin text", () => {
  it("gives what complete and fail need after a claim, and says each outcome", () => {
    expect(claimText([])).toEqual(["no job to claim now"]);
    const job = { id: "j1", kind: "answer", case_id: "c1", attempt: 1, lease_expires_at: "T", lease_token: "tok", revision: 2 };
    expect(claimText([job as never])[1]).toBe("  --lease-token tok --revision 2");
    expect(completeText({ job_id: "j1", outcome: "discarded_stale", case_revision: 3 })).toEqual([
      "job j1: discarded_stale (case revision 3)",
    ]);
    expect(failText({ job_id: "j1", status: "queued", available_at: "T2" })).toEqual(["job j1: queued again from T2"]);
  });
});
