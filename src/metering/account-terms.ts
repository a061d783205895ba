import type { PlanConfig } from "../config/schema.js";
import type { GatewayError } from "../errors.js";
import type { MeteredKind, Refusal } from "../quota/types.js";
import { meteringErrors } from "./metered-errors.js";

// What the metering path says to the ledger and to the client, per account kind: the base credits a reservation
// states (the plan's daily allowance; none for a balance the ledger keeps), and how a refusal reads. A record over
// every kind, so a new kind cannot be added without saying both.

export interface AccountTerms {
  /** `scope`: the account of several a request draws on (a pack's model). */
  base(plan: PlanConfig, scope: string | undefined): bigint | null;
  refused(refusal: Refusal, amount: bigint, now: Date, scope: string | undefined): GatewayError;
}

export const accountTerms: Record<MeteredKind, AccountTerms> = {
  daily_allowance: {
    base: (plan) => BigInt(plan.daily_tokens),
    refused: (r, _amount, now) => meteringErrors.quotaExceeded(r.used + r.reserved, r.allowance, r.resetsAt ?? now, now),
  },
  request_pack: {
    base: (plan, model) =>
      BigInt((model !== undefined && plan.request_packs && Object.hasOwn(plan.request_packs, model) && plan.request_packs[model]) || 0),
    refused: (r, _amount, now, model) =>
      meteringErrors.packExhausted(model ?? "", r.used + r.reserved, r.allowance, r.resetsAt ?? now, now),
  },
  reseller_usd: {
    base: () => null,
    refused: (r, amount) => meteringErrors.balanceExhausted(r.allowance - r.used - r.reserved, amount),
  },
};
