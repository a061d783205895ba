import { describe, expect, it } from "vitest";
import {
  BUILT_IN_RATE_CARDS,
  longContextMultiplier,
  rateCardFor,
  systemOneQuota,
  systemOneResellerPrice,
  systemOneUpstreamCost,
  systemOneVersion,
  type SystemOneRates,
} from "../../src/billing/systemone.js";
import { decimalText, formatUsd, parseUsd } from "../../src/billing/usd.js";

const plain: SystemOneRates = { tokenMultiplier: 1, groupMultiplier: 1 };

describe("subscription charge: ceil(input × input_long_context_multiplier × effective_model_multiplier)", () => {
  it.each([
    // input, token multiplier, group (key) multiplier, long context, units
    [1000, 1, 1, undefined, 1000n],
    [1000, 1.5, 1, undefined, 1500n],
    [1000, 1.5, 0.7, undefined, 1050n],
    [333, 0.1, 1, undefined, 34n], // 33.3 → 34
    [10, 0.1, 3, undefined, 3n], // exactly 3, not 3.0000000000000004
    [7, 0.3, 0.3, undefined, 1n], // 0.63 → 1: never free unless a multiplier is 0
    [5000, 0, 1, undefined, 0n],
    [5000, 2, 0, undefined, 0n],
    [0, 2, 2, undefined, 0n],
    [32_000, 1, 1, { thresholdTokens: 32_000, multiplier: 2 }, 32_000n], // at the threshold: not long
    [32_001, 1, 1, { thresholdTokens: 32_000, multiplier: 2 }, 64_002n],
    [40_000, 0.5, 0.7, { thresholdTokens: 32_000, multiplier: 1.25 }, 17_500n], // 40000 × 1.25 × 0.35
  ] as const)("%i tokens × %s × %s (long context %o) = %s units", (input, token, group, longContext, units) => {
    expect(systemOneQuota(input, { tokenMultiplier: token, groupMultiplier: group, longContext })).toBe(units);
  });

  it("counts output tokens nowhere and refuses impossible token counts", () => {
    expect(systemOneQuota(12, plain)).toBe(12n);
    expect(() => systemOneQuota(-1, plain)).toThrow(RangeError);
    expect(() => systemOneQuota(1.5, plain)).toThrow(RangeError);
  });

  it("applies a bring-your-own-key ratio exactly, before the one rounding", () => {
    expect(systemOneQuota(1000, { ...plain, byokRatio: 0 })).toBe(0n);
    expect(systemOneQuota(1000, { ...plain, byokRatio: 0.1 })).toBe(100n);
    expect(systemOneQuota(7, { tokenMultiplier: 0.3, groupMultiplier: 1, byokRatio: 0.1 })).toBe(1n); // 0.21 → 1
  });

  it("takes the long-context multiplier as 1 without a configuration", () => {
    expect(longContextMultiplier(10_000_000, undefined)).toEqual({ num: 1n, den: 1n });
  });
});

describe("reseller price in nano-dollars", () => {
  it.each([
    // input, USD per million, long context, nano-USD
    [1_000_000, 0.1, undefined, 100_000_000n], // 0.10 USD
    [1000, 0.1, undefined, 100_000n], // 0.0001 USD
    [1, 0.042, undefined, 42n],
    [1, 0.0421, undefined, 43n], // 42.1 nano → 43: rounded up
    [0, 5, undefined, 0n],
    [40_000, 0.25, { thresholdTokens: 32_000, multiplier: 2 }, 20_000_000n], // 40000 × 2 × 0.25 / 10⁶ = 0.02
  ] as const)("%i tokens at %s USD/M (long context %o) = %s nano-USD", (input, price, longContext, nano) => {
    expect(systemOneResellerPrice(input, price, longContext)).toBe(nano);
  });

  it("applies a bring-your-own-key ratio exactly", () => {
    expect(systemOneResellerPrice(1000, 0.1, undefined, 0.1)).toBe(10_000n);
    expect(systemOneResellerPrice(1000, 0.1, undefined, 0)).toBe(0n);
  });
});

describe("upstream cost estimate", () => {
  it("prices version 1.13.0 at 0.042 USD per million input tokens, output free, exactly", () => {
    const card = rateCardFor("1.13.0", {})!;
    expect(card).toEqual({ input_usd_per_million: 0.042, output_usd_per_million: 0 });
    expect(systemOneUpstreamCost(1_000_000, 5000, card)).toBe("0.042");
    expect(systemOneUpstreamCost(1234, 7, card)).toBe("0.000051828");
    expect(systemOneUpstreamCost(0, 0, card)).toBe("0");
  });

  it("reads the version from systemone-X.Y.Z or X.Y.Z; an alias pins no price", () => {
    expect(systemOneVersion("systemone-1.13.0")).toBe("1.13.0");
    expect(systemOneVersion("1.13.0")).toBe("1.13.0");
    expect(rateCardFor("systemone-1.13.0", {})).toEqual(BUILT_IN_RATE_CARDS["1.13.0"]);
    for (const alias of ["1.13", "latest", "systemone-latest", "1.14.0", "1.13.0-rc1", "toString", "__proto__"])
      expect(rateCardFor(alias, {})).toBeNull();
  });

  it("takes a configured rate card first, by the exact upstream name or its version", () => {
    const configured = {
      "1.13.0": { input_usd_per_million: 0.05, output_usd_per_million: 0.01 },
      latest: { input_usd_per_million: 0.07, output_usd_per_million: 0 },
    };
    expect(rateCardFor("systemone-1.13.0", configured)).toEqual(configured["1.13.0"]);
    expect(rateCardFor("latest", configured)).toEqual(configured.latest);
    expect(systemOneUpstreamCost(1_000_000, 2_000_000, configured["1.13.0"])).toBe("0.07");
  });
});

describe("USD amounts", () => {
  it("parses decimal text into nano-dollars exactly", () => {
    expect(parseUsd("25")).toBe(25_000_000_000n);
    expect(parseUsd("0.50")).toBe(500_000_000n);
    expect(parseUsd(" 0.000000001 ")).toBe(1n);
    expect(parseUsd("1000000000")).toBe(1_000_000_000_000_000_000n);
    for (const bad of ["", "-1", "+1", "1e3", "0.0000000001", "1,5", ".5", "5.", "1000000001", "NaN", "0x10"])
      expect(parseUsd(bad)).toBeNull();
  });

  it("formats nano-dollars as plain decimal text, no float on the way", () => {
    expect(formatUsd(0n)).toBe("0");
    expect(formatUsd(42_000n)).toBe("0.000042");
    expect(formatUsd(25_000_000_000n)).toBe("25");
    expect(formatUsd(1_500_000_001n)).toBe("1.500000001");
    expect(formatUsd(-1_500_000_000n)).toBe("-1.5");
    expect(decimalText({ num: 123n, den: 1n })).toBe("123");
    expect(() => decimalText({ num: 1n, den: 3n })).toThrow(RangeError);
  });
});
