import { add, ceil, mul, ratioOf, whole, type Ratio } from "./ratio.js";

// The video charge rule (docs/billing.md, "Video quota"): quota per second of video produced,
//   units = ceil(seconds × units_per_second × token_multiplier × group_multiplier [× byok_charge_ratio])
// where seconds is the sum over the job's videos. The hold is the requested (or default) duration × n; the
// settlement charges the seconds the provider reports, even above the hold (docs/architecture.md, "Rules"); a video whose
// length is not reported is charged the requested duration. All exact: no float takes part in a charge.

export interface VideoRates {
  /** The model's `video_price.units_per_second`. */
  unitsPerSecond: number;
  tokenMultiplier: number;
  groupMultiplier: number;
  /** quota.byok_charge_ratio for a request on the client's own upstream key; absent otherwise. */
  byokRatio?: number;
}

/** The quota units of one second of video for these rates, exact: what a job row keeps for its settlement. */
export function perSecondRate(rates: VideoRates): Ratio {
  const factors = [ratioOf(rates.unitsPerSecond), ratioOf(rates.tokenMultiplier), ratioOf(rates.groupMultiplier)];
  if (rates.byokRatio !== undefined) factors.push(ratioOf(rates.byokRatio));
  return mul(...factors);
}

/** What admission holds: `n` videos of `seconds` each. */
export function videoHold(seconds: number, n: number, rate: Ratio): bigint {
  return ceil(mul(ratioOf(seconds), ratioOf(whole(n, "n")), rate));
}

/**
 * The charge of a completed job: each video's reported length (null: not reported, so the requested
 * `seconds` is charged for it), summed, times the rate, rounded up once.
 */
export function videoCharge(reported: readonly (number | null)[], seconds: number, rate: Ratio): bigint {
  const total = add(...reported.map((s) => ratioOf(s ?? seconds)));
  return ceil(mul(total, rate));
}
