import { add, ceil, mul, ratioOf, type Ratio } from "./ratio.js";
import { decimalText, nanoUsdOf } from "./usd.js";

// Prices of the evaluation service (spec "Limits" → "the service"; docs/billing.md, "Evaluation service"):
//   subscription  units = ceil(input_tokens × input_long_context_multiplier × effective_model_multiplier)
//   reseller      nano-USD = ceil(input_tokens × input_long_context_multiplier × price_per_million / 10⁶ × 10⁹)
//   upstream      USD = input_tokens × input_rate / 10⁶ + output_tokens × output_rate / 10⁶   (an estimate, exact)
// Output tokens are recorded but free for clients.

const PER_MILLION: Ratio = { num: 1n, den: 1_000_000n };

/** Above `thresholdTokens` input tokens the whole input is priced `multiplier` times (absent: always 1). */
interface LongContext {
  thresholdTokens: number;
  multiplier: number;
}

export interface SystemOneRates {
  /** The model's token_multiplier. */
  tokenMultiplier: number;
  /** The key's pricing-group (global) multiplier; with the model's, the effective model multiplier. */
  groupMultiplier: number;
  longContext?: LongContext | undefined;
  /** For a request on the client's own upstream key: the share of the charge it pays. Absent: the full charge. */
  byokRatio?: number | undefined;
}

/** The upstream's price of one version, USD per million tokens. */
export interface RateCard {
  input_usd_per_million: number;
  output_usd_per_million: number;
}

/** Prices the gateway knows without configuration, by exact version. */
export const BUILT_IN_RATE_CARDS: Readonly<Record<string, RateCard>> = {
  "1.13.0": { input_usd_per_million: 0.042, output_usd_per_million: 0 },
};

/**
 * The evaluator version an upstream model names: `systemone-1.13.0` and `1.13.0` are version 1.13.0. Anything
 * else (`1.13`, `latest`) is an alias: it names no fixed version, so it pins no price.
 */
export function systemOneVersion(upstream: string): string {
  return upstream.startsWith("systemone-") ? upstream.slice("systemone-".length) : upstream;
}

const PINNED = /^\d+\.\d+\.\d+$/;

/** The rate card of an upstream model: a configured one (by the exact name or its version) first, then a built-in one for a pinned version; null when unknown. */
export function rateCardFor(upstream: string, configured: Readonly<Record<string, RateCard>>): RateCard | null {
  const version = systemOneVersion(upstream);
  const own = Object.hasOwn(configured, upstream)
    ? configured[upstream]
    : Object.hasOwn(configured, version)
      ? configured[version]
      : undefined;
  if (own) return own;
  return PINNED.test(version) && Object.hasOwn(BUILT_IN_RATE_CARDS, version) ? BUILT_IN_RATE_CARDS[version]! : null;
}

const tokens = (n: number): Ratio => {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`token counts must be non-negative integers, got ${n}`);
  return ratioOf(n);
};

/** input_long_context_multiplier: the configured multiplier above the threshold, else 1. */
export function longContextMultiplier(inputTokens: number, longContext: LongContext | undefined): Ratio {
  return longContext && inputTokens > longContext.thresholdTokens ? ratioOf(longContext.multiplier) : ratioOf(1);
}

/** The subscription charge in quota units. */
export function systemOneQuota(inputTokens: number, rates: SystemOneRates): bigint {
  const effective = mul(ratioOf(rates.tokenMultiplier), ratioOf(rates.groupMultiplier), ratioOf(rates.byokRatio ?? 1));
  return ceil(mul(tokens(inputTokens), longContextMultiplier(inputTokens, rates.longContext), effective));
}

/** A reseller's price in nano-dollars, from the model's price profile (USD per million input tokens). */
export function systemOneResellerPrice(
  inputTokens: number,
  usdPerMillion: number,
  longContext: LongContext | undefined,
  byokRatio = 1,
): bigint {
  const price = mul(ratioOf(usdPerMillion), ratioOf(byokRatio), PER_MILLION);
  return nanoUsdOf(mul(tokens(inputTokens), longContextMultiplier(inputTokens, longContext), price));
}

/** The estimated upstream cost in USD, as an exact decimal text. */
export function systemOneUpstreamCost(inputTokens: number, outputTokens: number, card: RateCard): string {
  return decimalText(
    add(
      mul(tokens(inputTokens), ratioOf(card.input_usd_per_million), PER_MILLION),
      mul(tokens(outputTokens), ratioOf(card.output_usd_per_million), PER_MILLION),
    ),
  );
}
