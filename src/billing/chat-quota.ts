import { add, ceil, mul, ratioOf, whole } from "./ratio.js";

// The chat billing rule (docs/billing.md; the spec gives none):
//   units = ceil(((prompt - cached) + cached × cached_ratio + completion × completion_ratio)
//                × token_multiplier × group_multiplier [× byok_charge_ratio])

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
  /** For a request on the client's own upstream key: the share of the charge it pays. Absent: the full charge. */
  byokRatio?: number;
}

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
  const multiplier = mul(ratioOf(rates.tokenMultiplier), ratioOf(rates.groupMultiplier), ratioOf(rates.byokRatio ?? 1));
  return ceil(mul(weighted, multiplier));
}
