import { describe, expect, it } from "vitest";
import { backoffDelay, pollDelay } from "../../../worker-kit/runner/backoff.js";

const policy = { baseMs: 100, maxMs: 1_000 };

describe("backoffDelay", () => {
  it("is full jitter: anywhere from 0 to the step's cap, which doubles per failure", () => {
    expect(backoffDelay(1, null, () => 0, policy)).toBe(0);
    expect(backoffDelay(1, null, () => 0.999, policy)).toBe(99);
    expect(backoffDelay(2, null, () => 0.5, policy)).toBe(100);
    expect(backoffDelay(3, null, () => 0.5, policy)).toBe(200);
    expect(backoffDelay(4, null, () => 0.5, policy)).toBe(400);
  });

  it("never lets the cap grow past maxMs, however many failures", () => {
    expect(backoffDelay(5, null, () => 0.999, policy)).toBe(999);
    expect(backoffDelay(1_000, null, () => 0.999, policy)).toBe(999);
  });

  it("waits at least the gateway's Retry-After, even past maxMs", () => {
    expect(backoffDelay(1, 3_000, () => 0, policy)).toBe(3_000);
    expect(backoffDelay(5, 50, () => 0.9, policy)).toBe(900);
  });
});

describe("pollDelay", () => {
  it("spreads the interval by a quarter each way", () => {
    expect(pollDelay(2_000, () => 0)).toBe(1_500);
    expect(pollDelay(2_000, () => 0.5)).toBe(2_000);
    expect(pollDelay(2_000, () => 0.999)).toBe(2_499);
  });
});
