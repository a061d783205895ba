import { describe, expect, it } from "vitest";
import { leaseTimes } from "../../../worker-kit/runner/lease-deadline.js";

const claimSentAt = Date.parse("2025-01-01T00:00:00.000Z");

describe("leaseTimes", () => {
  it("takes the gateway's expiry when it is the earlier bound, minus the margin", () => {
    const times = leaseTimes({ leaseExpiresAt: "2025-01-01T00:01:50.000Z", claimSentAt, leaseSeconds: 120, safetyMarginMs: 10_000 });
    expect(times).toEqual({ expiresAt: claimSentAt + 110_000, taskDeadline: claimSentAt + 100_000 });
  });

  it("takes the claim time plus lease_seconds when the gateway's clock runs ahead of ours (its expiry looks later)", () => {
    const times = leaseTimes({ leaseExpiresAt: "2025-01-01T00:05:00.000Z", claimSentAt, leaseSeconds: 120, safetyMarginMs: 10_000 });
    expect(times).toEqual({ expiresAt: claimSentAt + 120_000, taskDeadline: claimSentAt + 110_000 });
  });

  it("reads an offset timestamp by its offset", () => {
    const times = leaseTimes({ leaseExpiresAt: "2025-01-01T01:01:00+01:00", claimSentAt, leaseSeconds: 120, safetyMarginMs: 0 });
    expect(times.expiresAt).toBe(claimSentAt + 60_000);
  });

  it("falls back to the local bound when the expiry cannot be read", () => {
    const times = leaseTimes({ leaseExpiresAt: "soon", claimSentAt, leaseSeconds: 30, safetyMarginMs: 5_000 });
    expect(times).toEqual({ expiresAt: claimSentAt + 30_000, taskDeadline: claimSentAt + 25_000 });
  });
});
