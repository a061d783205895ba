import { nextResetAt, utcDay } from "./day.js";

// Every balance the ledger keeps is an account kind (DESIGN.md §5): one row per owner, kind and period, with
// base credits, restorations, posted and pending debits, reserved and settled through the same leases, holds
// and durable holds. A new kind (request packs, reset stocks) is one entry here; nothing else in the ledger
// switches on the kind.

export interface AccountKindSpec {
  /** The period of the account an operation at `now` draws on. */
  period(now: Date): string;
  /** When that account stops applying (a refusal's Retry-After); null for a perpetual balance. */
  periodEnd(now: Date): Date | null;
  /**
   * Whose figure the base credits are. `caller`: the caller states them on every reservation (the plan's daily
   * allowance, so a plan change applies at once; restorations are kept apart and survive it). `ledger`: what was
   * credited to the account, never overwritten by a reservation (a reseller's USD balance).
   */
  base: "caller" | "ledger";
  /** What one unit is, for the documentation and messages. */
  unit: "quota units" | "nano-dollars";
}

const PERPETUAL = "balance";

const ACCOUNT_KINDS = {
  /** The day's allowance in quota units (period: the UTC day). */
  daily_allowance: { period: utcDay, periodEnd: nextResetAt, base: "caller", unit: "quota units" },
  /** A reseller's pay-as-you-go balance in nano-dollars (one perpetual period). */
  reseller_usd: { period: () => PERPETUAL, periodEnd: () => null, base: "ledger", unit: "nano-dollars" },
} as const satisfies Record<string, AccountKindSpec>;

export type AccountKind = keyof typeof ACCOUNT_KINDS;

export const accountKinds = Object.keys(ACCOUNT_KINDS) as AccountKind[];

export function kindSpec(kind: AccountKind): AccountKindSpec {
  const spec: AccountKindSpec | undefined = Object.hasOwn(ACCOUNT_KINDS, kind) ? ACCOUNT_KINDS[kind] : undefined;
  if (!spec) throw new TypeError(`unknown account kind "${kind}"`);
  return spec;
}

/** The account of `ref` at `now`: its period, and the base credits to state (null: keep the account's own). */
export function accountAt(ref: { kind: AccountKind; base: bigint | null }, now: Date): { period: string; base: bigint | null } {
  const spec = kindSpec(ref.kind);
  if (spec.base === "caller" && ref.base === null) throw new TypeError(`an account of kind ${ref.kind} needs its base credits`);
  return { period: spec.period(now), base: spec.base === "caller" ? ref.base : null };
}
