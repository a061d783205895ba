import { dayStartAt, nextResetAt, utcDay } from "../time/day.js";
import { isoWeek, nextWeekAt } from "../time/week.js";

// Every balance the ledger keeps is an account kind (docs/architecture.md, "Rules"): one row per owner, kind and period, with
// base credits, restorations, posted and pending debits, reserved and settled through the same leases, holds
// and durable holds. A new kind is one entry here; nothing else in the ledger
// switches on the kind.

export interface AccountKindSpec {
  /** The period of the account an operation at `now` draws on; `scope` names one of several (a pack's model). */
  period(now: Date, scope?: string): string;
  /** When that account stops applying (a refusal's Retry-After); null for a perpetual balance. */
  periodEnd(now: Date): Date | null;
  /** When an account of the period `period` stops applying: past it the database grants nothing on it. */
  periodEndOf(period: string): Date | null;
  /**
   * Whose figure the base credits are. `caller`: the caller states them on every reservation (the plan's daily
   * allowance, so a plan change applies at once; restorations are kept apart and survive it). `ledger`: what was
   * credited to the account, never overwritten by a reservation (a reseller's USD balance).
   */
  base: "caller" | "ledger";
  /** What one unit is, for the documentation and messages. */
  unit: "quota units" | "nano-dollars" | "resets" | "requests";
  /** Whether requests reserve on it through the processes' leases; a reset stock is only posted by a use (resets-sql.ts). */
  leased: boolean;
  /** Whether reserve resets restore it (and its requests may use one automatically: auto-reset.ts). */
  resettable: boolean;
}

const PERPETUAL = "balance";
/** The period of gifted resets that never expire: sorts after every ISO instant, so gifts that expire go first. */
export const GIFT_PERPETUAL = "never";

const ACCOUNT_KINDS = {
  /** The day's allowance in quota units (period: the UTC day). */
  daily_allowance: {
    period: utcDay,
    periodEnd: nextResetAt,
    periodEndOf: (day: string) => nextResetAt(dayStartAt(day)),
    base: "caller",
    unit: "quota units",
    leased: true,
    resettable: true,
  },
  /** A reseller's pay-as-you-go balance in nano-dollars (one perpetual period). */
  reseller_usd: {
    period: () => PERPETUAL,
    periodEnd: () => null,
    periodEndOf: () => null,
    base: "ledger",
    unit: "nano-dollars",
    leased: true,
    resettable: false,
  },
  /**
   * A fixed-quota request pack: the requests a plan gives per UTC day for one model (period: the UTC day and the
   * model, `2026-11-26/<model id>`); the base is the plan's count, stated by the caller.
   */
  request_pack: {
    period: (now: Date, scope?: string) => `${utcDay(now)}/${scope ?? ""}`,
    periodEnd: nextResetAt,
    // The period starts with its day: `2026-11-26/<model>`.
    periodEndOf: (period: string) => nextResetAt(dayStartAt(period)),
    base: "caller",
    unit: "requests",
    leased: true,
    resettable: false,
  },
  /**
   * The week's reserve resets (period: the ISO week in UTC, YYYY-Www, renewing Monday 00:00 UTC); the base is the
   * plan's `weekly_resets`, stated by the caller, so what is left unused never carries over.
   */
  weekly_resets: {
    period: isoWeek,
    periodEnd: nextWeekAt,
    periodEndOf: () => null,
    base: "caller",
    unit: "resets",
    leased: false,
    resettable: false,
  },
  /**
   * Resets gifted by operators, credited by grants. One account per expiry: the period is the expiry instant
   * (ISO 8601, UTC) of the grants it holds, or GIFT_PERPETUAL for gifts that never expire, which is what an
   * operation without a stated expiry draws on.
   */
  gifted_resets: {
    period: () => GIFT_PERPETUAL,
    periodEnd: () => null,
    periodEndOf: () => null,
    base: "ledger",
    unit: "resets",
    leased: false,
    resettable: false,
  },
} as const satisfies Record<string, AccountKindSpec>;

export type AccountKind = keyof typeof ACCOUNT_KINDS;

export const accountKinds = Object.keys(ACCOUNT_KINDS) as AccountKind[];

/** The kinds requests are metered on (reserved through the leases); reset stocks are not. */
export type MeteredKind = { [K in AccountKind]: (typeof ACCOUNT_KINDS)[K]["leased"] extends true ? K : never }[AccountKind];

export function kindSpec(kind: AccountKind): AccountKindSpec {
  const spec: AccountKindSpec | undefined = Object.hasOwn(ACCOUNT_KINDS, kind) ? ACCOUNT_KINDS[kind] : undefined;
  if (!spec) throw new TypeError(`unknown account kind "${kind}"`);
  return spec;
}

/** The account of `ref` at `now`: its period, and the base credits to state (null: keep the account's own). */
export function accountAt(
  ref: { kind: AccountKind; base: bigint | null; scope?: string },
  now: Date,
): { period: string; base: bigint | null } {
  const spec = kindSpec(ref.kind);
  if (spec.base === "caller" && ref.base === null) throw new TypeError(`an account of kind ${ref.kind} needs its base credits`);
  return { period: spec.period(now, ref.scope), base: spec.base === "caller" ? ref.base : null };
}

/**
 * The revision of a caller's view of the base credits (the plan's allowance), which an account keeps with its
 * credits (quota_accounts.credits_revision): a statement states its base only over an older revision, so a process
 * with an older view never undoes a newer one. The user's plan changes count first (users.plan_revision, carried by
 * the key's principal), then when the process loaded its config (seconds): after a plan change every process agrees
 * at once, and a rolling config change is decided by the newest process.
 */
export function baseRevision(planRevision: number, configLoadedAtSeconds: bigint): bigint {
  return (BigInt(planRevision) << 33n) + configLoadedAtSeconds;
}
