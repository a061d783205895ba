import { describe, expect, it } from "vitest";
import { refusalOf, transferableOf, type DayTotals, type PolicyValues } from "../../src/transfers/rules.js";

// The checks a token transfer passes (docs/billing.md, "Token transfers"), shared by the send and the preview.

const policy: PolicyValues = { enabled: true, minAmount: 10n, sendDailyLimit: 600n, receiveDailyLimit: 700n, serviceDailyLimit: 5000n };
const none: DayTotals = { sent: 0n, received: 0n, service: 0n, receivedBySender: 0n };

describe("refusalOf", () => {
  it("accepts what every check allows, up to each limit exactly", () => {
    expect(refusalOf(policy, none, 10n, 10n)).toBeNull();
    expect(refusalOf(policy, { sent: 500n, received: 600n, service: 4900n, receivedBySender: 0n }, 100n, 100n)).toBeNull();
  });

  it("names the first check that fails, in order", () => {
    expect(refusalOf({ ...policy, enabled: false }, none, 1n, 0n)).toEqual({ refused: "disabled" });
    expect(refusalOf(policy, none, 9n, 0n)).toEqual({ refused: "below_minimum", minimum: 10n });
    expect(refusalOf(policy, { ...none, sent: 550n }, 60n, 1000n)).toEqual({ refused: "send_limit", left: 50n });
    expect(refusalOf(policy, { ...none, received: 650n }, 60n, 1000n)).toEqual({ refused: "receive_limit" });
    expect(refusalOf(policy, { ...none, service: 4990n }, 20n, 1000n)).toEqual({ refused: "service_limit", left: 10n });
    expect(refusalOf(policy, none, 20n, 19n)).toEqual({ refused: "insufficient", transferable: 19n });
    // Over a limit already (a limit lowered since): what is left is 0, never negative.
    expect(refusalOf({ ...policy, sendDailyLimit: 100n }, { ...none, sent: 300n }, 10n, 1000n)).toEqual({
      refused: "send_limit",
      left: 0n,
    });
  });
});

describe("transferableOf", () => {
  it("is the remaining less what was received today, never below 0", () => {
    expect(transferableOf(700n, { ...none, receivedBySender: 300n })).toBe(400n);
    expect(transferableOf(200n, { ...none, receivedBySender: 300n })).toBe(0n);
    expect(transferableOf(-50n, none)).toBe(0n);
  });
});
