// Exact rational arithmetic for prices and multipliers. Config values arrive as JS numbers (YAML); their
// shortest decimal spelling is what the operator wrote ("27.5", "0.1"), so that spelling is taken as the exact
// value. No float ever takes part in a charge.

export interface Ratio {
  readonly num: bigint;
  readonly den: bigint;
}

const TEN = 10n;

/** Fractions already spelled out: every charge reads the same few configured ratios and multipliers. */
const fractions = new Map<number, Ratio>();
const MAX_FRACTIONS = 1024;

/** The exact decimal value of a finite, non-negative number's shortest spelling. */
export function ratioOf(value: number | bigint): Ratio {
  if (typeof value === "bigint") return { num: value, den: 1n };
  if (!Number.isFinite(value) || value < 0) throw new RangeError(`not a finite non-negative number: ${value}`);
  if (Number.isSafeInteger(value)) return { num: BigInt(value), den: 1n };
  let ratio = fractions.get(value);
  if (!ratio) {
    ratio = spelled(value);
    if (fractions.size >= MAX_FRACTIONS) fractions.clear();
    fractions.set(value, ratio);
  }
  return ratio;
}

function spelled(value: number): Ratio {
  const [mantissa, exponentText] = String(value).split("e");
  const exponent = Number(exponentText ?? 0);
  const [whole, fraction = ""] = mantissa!.split(".");
  let num = BigInt(whole! + fraction);
  let den = TEN ** BigInt(fraction.length);
  if (exponent > 0) num *= TEN ** BigInt(exponent);
  if (exponent < 0) den *= TEN ** BigInt(-exponent);
  return { num, den };
}

export const mul = (...rs: Ratio[]): Ratio => rs.reduce((a, b) => ({ num: a.num * b.num, den: a.den * b.den }), { num: 1n, den: 1n });

export const add = (...rs: Ratio[]): Ratio =>
  rs.reduce((a, b) => ({ num: a.num * b.den + b.num * a.den, den: a.den * b.den }), { num: 0n, den: 1n });

/** Smallest integer ≥ the ratio (non-negative ratios only). */
export function ceil(r: Ratio): bigint {
  return (r.num + r.den - 1n) / r.den;
}

/** A count as a bigint: a non-negative safe integer, else a RangeError naming it. */
export const whole = (n: number, name: string): bigint => {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${name} must be a non-negative integer, got ${n}`);
  return BigInt(n);
};
