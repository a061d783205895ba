import { add, ceil, mul, ratioOf } from "./ratio.js";

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
  const weighted = add(
    ratioOf(prompt - cached),
    mul(ratioOf(cached), ratioOf(rates.cachedRatio)),
    mul(ratioOf(completion), ratioOf(rates.completionRatio)),
  );
  return ceil(mul(weighted, ratioOf(rates.tokenMultiplier), ratioOf(rates.groupMultiplier)));
}
