import { ceil, ratioOf } from "./ratio.js";

// The chat billing rule (docs/billing.md; the spec gives none):
//   units = ceil(((prompt - cached) + cached × cached_ratio + completion × completion_ratio)
//                × token_multiplier × group_multiplier)

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  /** Subset of promptTokens served from the provider's cache; never counted twice. */
  cachedTokens: number;
}

export interface ChatRates {
  completionRatio: number;
  cachedRatio: number;
  tokenMultiplier: number;
  /** The key's pricing-group (global) multiplier. */
  groupMultiplier: number;
}

const whole = (n: number, name: string): bigint => {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${name} must be a non-negative integer, got ${n}`);
  return BigInt(n);
};

export function chatQuota(usage: TokenUsage, rates: ChatRates): bigint {
  const prompt = whole(usage.promptTokens, "promptTokens");
  const completion = whole(usage.completionTokens, "completionTokens");
  // A provider reporting more cached than prompt tokens would be inconsistent; cap so nothing is counted twice.
  const cached = whole(Math.min(usage.cachedTokens, usage.promptTokens), "cachedTokens");
  const cachedRatio = ratioOf(rates.cachedRatio);
  const completionRatio = ratioOf(rates.completionRatio);
  const token = ratioOf(rates.tokenMultiplier);
  const group = ratioOf(rates.groupMultiplier);
  // Over the common denominator of the two ratios; written out rather than composed from ratio helpers
  // because it runs twice per request and every intermediate bigint is an allocation.
  const weighted =
    ((prompt - cached) * cachedRatio.den + cached * cachedRatio.num) * completionRatio.den +
    completion * completionRatio.num * cachedRatio.den;
  return ceil({
    num: weighted * token.num * group.num,
    den: cachedRatio.den * completionRatio.den * token.den * group.den,
  });
}
