import { describe, expect, it } from "vitest";
import { backoffMs } from "../../src/db/backoff.js";

describe("backoffMs", () => {
  it("doubles from the first pause up to the cap", () => {
    const b = { firstMs: 50, maxMs: 1000 };
    expect([0, 1, 2, 3, 4, 5, 6].map((n) => backoffMs(n, b))).toEqual([50, 100, 200, 400, 800, 1000, 1000]);
  });

  it("stays at the cap however many attempts failed (no overflow to NaN or Infinity)", () => {
    expect(backoffMs(5000, { firstMs: 100, maxMs: 2000 })).toBe(2000);
  });

  it("with jitter, draws each pause from the upper half", () => {
    const b = { firstMs: 100, maxMs: 2000, jitter: true };
    for (let i = 0; i < 200; i++) {
      const ms = backoffMs(3, b);
      expect(ms).toBeGreaterThanOrEqual(400);
      expect(ms).toBeLessThanOrEqual(800);
    }
  });
});
