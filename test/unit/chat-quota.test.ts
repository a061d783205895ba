import { describe, expect, it } from "vitest";
import { chatQuota, type ChatRates } from "../../src/billing/chat-quota.js";
import { ceil, ratioOf } from "../../src/billing/ratio.js";

const plain: ChatRates = { completionRatio: 1, cachedRatio: 1, tokenMultiplier: 1, groupMultiplier: 1 };

describe("ratioOf", () => {
  it.each([
    [0.1, 1n, 10n],
    [27.5, 275n, 10n],
    [3, 3n, 1n],
    [1e-7, 1n, 10_000_000n],
    [1.5e21, 1_500_000_000_000_000_000_000n, 1n],
  ])("%s is exactly %s/%s", (value, num, den) => {
    const r = ratioOf(value);
    expect(r.num * den).toBe(num * r.den);
  });

  it("rejects negatives and non-finite values", () => {
    expect(() => ratioOf(-1)).toThrow(RangeError);
    expect(() => ratioOf(Number.NaN)).toThrow(RangeError);
  });

  it("ceil rounds up only a true remainder", () => {
    expect(ceil({ num: 10n, den: 5n })).toBe(2n);
    expect(ceil({ num: 11n, den: 5n })).toBe(3n);
    expect(ceil({ num: 0n, den: 7n })).toBe(0n);
  });
});

describe("chatQuota", () => {
  it("is prompt + completion with unit rates", () => {
    expect(chatQuota({ promptTokens: 100, completionTokens: 50, cachedTokens: 0 }, plain)).toBe(150n);
  });

  it("applies the completion ratio and both multipliers, rounding up once at the end", () => {
    // (100 + 50 × 3) × 1.5 × 0.1 = 37.5 → 38
    const rates = { completionRatio: 3, cachedRatio: 1, tokenMultiplier: 1.5, groupMultiplier: 0.1 };
    expect(chatQuota({ promptTokens: 100, completionTokens: 50, cachedTokens: 0 }, rates)).toBe(38n);
  });

  it("prices cached prompt tokens by the cached ratio, never twice", () => {
    // (1000 - 800) + 800 × 0.25 + 10 = 410
    const rates = { ...plain, cachedRatio: 0.25 };
    expect(chatQuota({ promptTokens: 1000, completionTokens: 10, cachedTokens: 800 }, rates)).toBe(410n);
    // More cached than prompt tokens is capped at the prompt.
    expect(chatQuota({ promptTokens: 10, completionTokens: 0, cachedTokens: 50 }, rates)).toBe(3n);
  });

  it("does not suffer float error: 0.1 × 3 tokens is exactly 0.3 → 1, and 0.1 × 30 is exactly 3", () => {
    expect(chatQuota({ promptTokens: 3, completionTokens: 0, cachedTokens: 0 }, { ...plain, tokenMultiplier: 0.1 })).toBe(1n);
    expect(chatQuota({ promptTokens: 30, completionTokens: 0, cachedTokens: 0 }, { ...plain, tokenMultiplier: 0.1 })).toBe(3n);
    // 0.1 + 0.2 in floats is 0.30000000000000004; exact: (0.1 + 0.2) × 10 tokens = 3
    expect(
      chatQuota({ promptTokens: 10, completionTokens: 10, cachedTokens: 0 }, { ...plain, tokenMultiplier: 0.1, completionRatio: 2 }),
    ).toBe(3n);
  });

  it("keeps a zero multiplier free and zero usage at zero", () => {
    expect(chatQuota({ promptTokens: 500, completionTokens: 500, cachedTokens: 0 }, { ...plain, tokenMultiplier: 0 })).toBe(0n);
    expect(chatQuota({ promptTokens: 0, completionTokens: 0, cachedTokens: 0 }, plain)).toBe(0n);
  });

  it("rejects fractional or negative token counts", () => {
    expect(() => chatQuota({ promptTokens: 1.5, completionTokens: 0, cachedTokens: 0 }, plain)).toThrow(RangeError);
    expect(() => chatQuota({ promptTokens: -1, completionTokens: 0, cachedTokens: 0 }, plain)).toThrow(RangeError);
  });
});
