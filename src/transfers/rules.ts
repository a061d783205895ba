// The checks a send passes (docs/billing.md, "Token transfers"), in the order a refusal names the first that
// fails: the send (under its lock) and the preview (moving nothing) both ask this.

export interface PolicyValues {
  enabled: boolean;
  minAmount: bigint;
  sendDailyLimit: bigint;
  receiveDailyLimit: bigint;
  serviceDailyLimit: bigint;
}

/** The day's records, pending transfers counted (a completed one by what it applied). */
export interface DayTotals {
  /** Sent by the sender today. */
  sent: bigint;
  /** Received by the recipient today. */
  received: bigint;
  /** Every transfer today. */
  service: bigint;
  /** What the sender received today (applied): not forwardable today. */
  receivedBySender: bigint;
}

export type SendRefusal =
  | { refused: "disabled" }
  | { refused: "below_minimum"; minimum: bigint }
  | { refused: "send_limit"; left: bigint }
  | { refused: "receive_limit" }
  | { refused: "service_limit"; left: bigint }
  | { refused: "insufficient"; transferable: bigint };

const clamp = (n: bigint) => (n > 0n ? n : 0n);

/** What the sender can give now: their day's remaining less what they received today (never below 0). */
export const transferableOf = (remaining: bigint, totals: DayTotals): bigint => clamp(remaining - totals.receivedBySender);

/** The first check `amount` fails, or null when a send of it would be accepted. */
export function refusalOf(p: PolicyValues, totals: DayTotals, amount: bigint, transferable: bigint): SendRefusal | null {
  if (!p.enabled) return { refused: "disabled" };
  if (amount < p.minAmount) return { refused: "below_minimum", minimum: p.minAmount };
  if (totals.sent + amount > p.sendDailyLimit) return { refused: "send_limit", left: clamp(p.sendDailyLimit - totals.sent) };
  if (totals.received + amount > p.receiveDailyLimit) return { refused: "receive_limit" };
  if (totals.service + amount > p.serviceDailyLimit) return { refused: "service_limit", left: clamp(p.serviceDailyLimit - totals.service) };
  if (amount > transferable) return { refused: "insufficient", transferable };
  return null;
}
