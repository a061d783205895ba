import { describe, expect, it } from "vitest";
import { perSecondRate, videoCharge, videoHold } from "../../src/billing/video-quota.js";

// The video charge rule (docs/billing.md, "Video quota"), with worked numbers.

describe("video quota", () => {
  const rate = perSecondRate({ unitsPerSecond: 100, tokenMultiplier: 1.5, groupMultiplier: 2 });

  it("prices a second at units_per_second × token_multiplier × group_multiplier, exactly", () => {
    // 100 × 1.5 × 2 = 300 units per second.
    expect(rate.num / rate.den).toBe(300n);
    expect(rate.num % rate.den).toBe(0n);
  });

  it("holds the requested duration × n", () => {
    // 5 s × 2 videos × 300 = 3,000.
    expect(videoHold(5, 2, rate)).toBe(3000n);
    // 2.5 s × 1 × 300 = 750.
    expect(videoHold(2.5, 1, rate)).toBe(750n);
  });

  it("charges the seconds reported, summed over the videos, rounded up once", () => {
    // (5.04 + 4.5) × 300 = 2,862.
    expect(videoCharge([5.04, 4.5], 5, rate)).toBe(2862n);
    // 27.5 × 10 = 275 per second; 2.01 s → 552.75 → 553.
    expect(videoCharge([2.01], 5, perSecondRate({ unitsPerSecond: 10, tokenMultiplier: 27.5, groupMultiplier: 1 }))).toBe(553n);
    // 0.1 per second; 3.33 s → 0.333 → 1: never free once something is produced.
    expect(videoCharge([3.33], 5, perSecondRate({ unitsPerSecond: 0.1, tokenMultiplier: 1, groupMultiplier: 1 }))).toBe(1n);
  });

  it("charges above the hold when the provider produced more (settlement charges real usage)", () => {
    // Held 5 s × 1 = 1,500; 8 s were produced: 2,400.
    expect(videoHold(5, 1, rate)).toBe(1500n);
    expect(videoCharge([8], 5, rate)).toBe(2400n);
  });

  it("charges a video whose length was not reported at the requested duration", () => {
    // (5 + 4) × 300 = 2,700.
    expect(videoCharge([null, 4], 5, rate)).toBe(2700n);
  });

  it("keeps a zero multiplier free and applies the byok ratio", () => {
    expect(videoCharge([10], 5, perSecondRate({ unitsPerSecond: 100, tokenMultiplier: 0, groupMultiplier: 1 }))).toBe(0n);
    // 300 × 0.1 = 30 per second; 10 s → 300.
    expect(videoCharge([10], 5, perSecondRate({ unitsPerSecond: 100, tokenMultiplier: 1.5, groupMultiplier: 2, byokRatio: 0.1 }))).toBe(
      300n,
    );
  });
});
