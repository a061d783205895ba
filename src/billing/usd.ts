import { ceil, mul, type Ratio } from "./ratio.js";

// US dollars as integer nano-dollars (10⁻⁹ USD): the unit of the reseller ledger. A million tokens at the
// evaluator's 0.042 USD is 42 nano-dollars a token, so prices quoted per million tokens with up to three
// decimals stay whole per token, and a balance of 9 billion USD still fits a bigint column.

const NANO_PER_USD = 1_000_000_000n;
const NANO_DIGITS = 9;

/** USD at most this large per operation: a typo of a few digits must not credit a fortune. */
const MAX_USD = 1_000_000_000n;

const USD_TEXT = /^(\d{1,10})(?:\.(\d{1,9}))?$/;

/** "25", "0.50", "0.000000001" → nano-dollars; null for anything else (signs, exponents, more than 9 decimals). */
export function parseUsd(text: string): bigint | null {
  const match = USD_TEXT.exec(text.trim());
  if (!match) return null;
  const nano = BigInt(match[1]!) * NANO_PER_USD + BigInt((match[2] ?? "").padEnd(NANO_DIGITS, "0"));
  return nano <= MAX_USD * NANO_PER_USD ? nano : null;
}

/** An exact decimal: the ratio's denominator must be a power of ten (every price and multiplier is). */
export function decimalText(r: Ratio): string {
  const digits = String(r.den).length - 1;
  if (r.den !== 10n ** BigInt(digits)) throw new RangeError(`not a decimal fraction: ${r.num}/${r.den}`);
  const negative = r.num < 0n;
  const magnitude = String(negative ? -r.num : r.num).padStart(digits + 1, "0");
  const whole = magnitude.slice(0, magnitude.length - digits);
  const fraction = magnitude.slice(magnitude.length - digits).replace(/0+$/, "");
  return `${negative ? "-" : ""}${whole}${fraction ? `.${fraction}` : ""}`;
}

/** Nano-dollars as a plain decimal number text: 42000n → "0.000042", 25_000_000_000n → "25". */
export const formatUsd = (nano: bigint): string => decimalText({ num: nano, den: NANO_PER_USD });

/** An amount in USD rounded up to whole nano-dollars: a price is never rounded in the buyer's favour to zero. */
export const nanoUsdOf = (usd: Ratio): bigint => ceil(mul(usd, { num: NANO_PER_USD, den: 1n }));
