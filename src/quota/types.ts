// The quota ledger's contract (docs/architecture.md, "Rules"). One mechanism for every balance the spec names: an account
// (owner + kind + period, account-kinds.ts) holds base credits, restorations, and posted and pending debits.
// A hold is a two-phase transfer against it: pending -> posted (settle) | voided (release) | expired. Quota
// units are bigint. A process holds a lease (escrow) on each busy account and takes its requests' holds out of
// it in memory; what is settled later than its request (a video job, a pending transfer) takes a durable hold,
// a row of its own in PostgreSQL (docs/billing.md).

import type pg from "pg";
import type { LedgerStats } from "../metrics/recorders.js";
import type { AccountKind } from "./account-kinds.js";
import type { ExpiryCounts } from "./expire-sql.js";
import type { GrantRow, ResetsRows, ResetTrigger, UseResetOutcome } from "./resets-sql.js";

export type { AccountKind, MeteredKind } from "./account-kinds.js";
export type { ExpiryCounts } from "./expire-sql.js";

/** Which balance: a user's account of one kind, in the period the ledger's clock says. */
export interface AccountRef {
  kind: AccountKind;
  userId: string;
  /**
   * The base credits, for kinds whose base the caller states (the plan's daily allowance: a plan change applies
   * at once); null for kinds whose credits the ledger keeps (a reseller balance).
   */
  base: bigint | null;
  /** Which account of a kind that has several per user and period (a request pack's model). */
  scope?: string;
  /** The user's plan revision the base credits are from (users.plan_revision; 0 when unknown). */
  planRevision?: number;
}

export interface Hold {
  id: string;
  accountId: string;
  amount: bigint;
}

export interface ReserveInput extends AccountRef {
  /** Units to hold: the admission estimate, in the account's unit. */
  amount: bigint;
  requestId: string;
  /**
   * The plan's weekly resets when this request may use a reserve reset automatically (a quota-billed request of
   * the day's allowance that is not exempt: docs/billing.md, "Automatic resets"); absent or null: it never does.
   */
  weeklyResets?: bigint | null;
}

/** Why a reservation was refused: the account's numbers when it was. */
export interface Refusal {
  ok: false;
  /** What the account allows: its base credits plus restorations. */
  allowance: bigint;
  /**
   * Posted debits, as the account row holds them: the charges other processes' open leases posted and have not
   * folded yet (docs/billing.md, "Escrow") are in `reserved` here. Their sum, what a refusal states, is exact but
   * for units another process gave back and no full sync gathered yet (quota_leases.returned), counted as
   * reserved: a refusal after a sync that fell short has gathered them, all but those on a lease row another
   * statement held.
   */
  used: bigint;
  /** Pending debits other than this process's free leased units. */
  reserved: bigint;
  /** When the account stops applying (00:00 UTC for the day's allowance); null for a perpetual balance. */
  resetsAt: Date | null;
}

export type ReserveResult = { ok: true; hold: Hold } | Refusal;

export interface AccountBalance {
  kind: AccountKind;
  period: string;
  /** Base credits: the plan's allowance (as the caller stated it), or what was credited. */
  credits: bigint;
  /** Restorations (reserve resets, received transfers) on top of the base. */
  restored: bigint;
  /** Posted debits: settled charges (may exceed the credits after an overshoot). */
  used: bigint;
  /** Pending debits: requests in flight, durable holds, and the processes' leased units. */
  reserved: bigint;
  /** credits + restored - used - reserved; negative after an overshoot. */
  remaining: bigint;
  resetsAt: Date | null;
}

export interface DurableHoldInput extends AccountRef {
  /** The hold's id, chosen by the caller (a UUID): reserving the same id again is the same hold, never a second. */
  id: string;
  amount: bigint;
  /** What the hold is for (`video:<job id>`, `transfer:<id>`): kept on the row, never parsed. */
  reference: string;
  /** After this (by the ledger's clock) the expiry sweep voids it as expired; a later post still posts. */
  expiresAt: Date;
  /** As a request's (ReserveInput): the plan's weekly resets when the hold may use a reset automatically. */
  weeklyResets?: bigint | null;
}

export type DurableStatus = "pending" | "posted" | "voided" | "expired";

export interface DurableHold {
  id: string;
  accountId: string;
  amount: bigint;
  status: DurableStatus;
  charged: bigint | null;
  reference: string;
  expiresAt: Date;
}

export type DurableReserveResult = { ok: true; hold: DurableHold } | Refusal;

export interface RestoreInput extends AccountRef {
  /** Units to restore; with `upToSpent`, at most what was spent (posted less restored) when it applies. */
  amount: bigint;
  upToSpent: boolean;
  /** Who restored (`reserve_reset`, `transfer`): with `reference`, the restoration's identity. */
  source: string;
  /** The same source and reference again is the same restoration: it returns the first outcome, no second effect. */
  reference: string;
}

export interface Restoration {
  /** Units added to the account's restorations (0 when nothing was spent). */
  applied: bigint;
  /** True when this source and reference had been applied before (by this call's earlier attempt or another). */
  duplicate: boolean;
  accountId: string;
}

export type { ResetKind, ResetTrigger, UseResetOutcome } from "./resets-sql.js";

export interface UseResetInput {
  userId: string;
  /** The use's id (a UUID): using the same id again returns the first outcome and posts no second reset. */
  id: string;
  /** The plan's daily allowance and weekly resets, stated by the caller as on every reservation. */
  dailyBase: bigint;
  weeklyBase: bigint;
  /** The user's plan revision those are from (users.plan_revision; 0 when unknown). */
  planRevision?: number;
  trigger: ResetTrigger;
}

export type GrantResetsInput = GrantRow;

/** A user's reserve resets now (docs/billing.md, "Reserve resets"). */
export interface ResetBalance extends ResetsRows {
  /** The ISO week in UTC (YYYY-Www) the weekly resets belong to, and when the next week's start (Monday 00:00 UTC). */
  week: string;
  weeklyRenewsAt: Date;
  weeklyAllowance: bigint;
  /** This week's resets not used yet (the allowance less what was used; never below 0). */
  weeklyLeft: bigint;
}

/**
 * How a settlement ended for its caller: `committed` (the charge and its record are durable), or `withdrawn` (its
 * caller stopped waiting before any statement carrying it could have committed: it was turned into a void, with
 * the record the caller gave for that case, and nothing is charged).
 */
export type SettleOutcome = "committed" | "withdrawn";

/** The caller of a settlement that may be withdrawn: the record its request gets then (its log row as a void). */
export interface Withdrawable {
  withdrawnRecord(): string | null;
}

export interface SettleOptions {
  /**
   * Past this many ms without a commit, the charge is withdrawn (its caller is answered "withdrawn"): it becomes a
   * void if no statement carrying it can have committed, and is refunded once one whose outcome was unknown turns
   * out to have committed (refund-sql.ts). No deadline: it waits for the commit.
   */
  deadlineMs: number;
  withdrawable: Withdrawable;
}

export interface QuotaLedger {
  /**
   * Holds `amount` if the account's remaining covers it, atomically across every process: out of this process's
   * lease when it covers the amount, else after a sync that grants more (calls waiting for one are admitted in
   * arrival order).
   */
  reserve(input: ReserveInput): Promise<ReserveResult>;
  /**
   * Posts the real charge (may exceed the hold: the service was delivered) and returns the hold's remainder;
   * resolves once the charge is committed (settlements ready together share one commit), or withdrawn past the
   * deadline of `options`. `record` (the request's log row, encoded by the journal the ledger was built with)
   * commits with the charge. Also posts a hold that expired meanwhile. A hold settled or released before throws
   * HoldResolvedError.
   */
  settle(holdId: string, charged: bigint, record?: string | null, options?: SettleOptions): Promise<SettleOutcome>;
  /** Voids a pending hold, committing `record` with it; resolves once committed. A hold resolved before throws HoldResolvedError. */
  release(holdId: string, record?: string | null): Promise<void>;
  /** A hold in PostgreSQL, for what is settled later or by another process: one guarded statement. */
  reserveDurable(input: DurableHoldInput): Promise<DurableReserveResult>;
  /** Posts a durable hold's charge; posting again returns the first outcome. A voided hold throws HoldResolvedError. */
  postDurable(id: string, charged: bigint): Promise<DurableHold>;
  /** Voids a durable hold; voiding again (or an expired hold) is no second effect. A posted hold throws HoldResolvedError. */
  voidDurable(id: string): Promise<DurableHold>;
  /** Raises an account's restorations, once per source and reference. */
  restore(input: RestoreInput): Promise<Restoration>;
  /**
   * Uses one reserve reset now: posts one on the week's account, else on the gift that expires first, and restores
   * the day's allowance (to the plan's allowance, holds in flight still held), in one transaction under the day's
   * account lock. Idempotent by `id`. With `client`, inside the caller's transaction (it commits with it).
   */
  useReset(input: UseResetInput, client?: pg.PoolClient): Promise<UseResetOutcome>;
  /** Credits gifted resets (perpetual, or until `expiresAt`), with the grant's record; with `client`, in the caller's transaction. */
  grantResets(input: GrantResetsInput, client?: pg.PoolClient): Promise<{ id: string; createdAt: Date }>;
  /** The user's reserve resets now, with the latest grants and uses; with `client`, as the caller's transaction sees them. */
  resets(userId: string, weeklyBase: bigint, client?: pg.PoolClient): Promise<ResetBalance>;
  /** The account in the current period (zeros, with the base credits, when nothing was used yet). */
  balance(account: AccountRef): Promise<AccountBalance>;
  /** Gives this process's unused leased units back to the accounts and waits until the ledger has everything. */
  flush(): Promise<void>;
  /** Closes this process's leases (at shutdown, after the last settlement). */
  close(): Promise<void>;
  /**
   * Fences the processes whose heartbeat stopped (by the database's clock, as heartbeats are written) and expires
   * their leases, and the durable holds past their expiry (by the ledger's clock); their units return to the
   * accounts (expire-sql.ts).
   */
  expire(): Promise<ExpiryCounts>;
  /** Runs the in-memory sweep now (idle leases give back, over-age reservations free their units); a timer runs it every second. */
  sweep(): void;
  /**
   * Adds `amount` nano-dollars to a user's reseller balance, with a record of the credit; returns the balance after
   * it. With `client`, in the caller's transaction.
   */
  creditReseller(userId: string, amount: bigint, note: string, client?: pg.PoolClient): Promise<AccountBalance>;
  /** This process's leases, holds and unwritten settlements now, for the metrics. */
  stats(): LedgerStats;
}

export class HoldResolvedError extends Error {
  constructor(
    readonly holdId: string,
    readonly status?: DurableStatus,
  ) {
    super(`hold ${holdId} was already resolved${status ? ` (${status})` : ""}`);
    this.name = "HoldResolvedError";
  }
}

export class HoldNotFoundError extends Error {
  constructor(readonly holdId: string) {
    super(`no durable hold ${holdId}`);
    this.name = "HoldNotFoundError";
  }
}

/** A gateway process, known to the database by its heartbeat (instances.ts, "Fencing"). */
export interface Instance {
  /** The id this process admits under now: a new one after it was fenced. */
  readonly id: string;
  /**
   * Whether the last acknowledged heartbeat is recent enough that no other process can have fenced this process
   * yet: only then may a lease admit from its free units without asking the database.
   */
  fresh(): boolean;
  /** A statement that also refreshed the heartbeat committed; it was sent at `sentAt` (performance.now()). */
  beaten(sentAt: number): void;
  /** The database said this process was fenced (a sync's answer): it drops every lease and registers again. */
  fenced(): void;
  /** Called when this process is fenced, before it admits anything again. */
  onFenced(listener: () => void): void;
  /** The id to open new leases under, once registered (after a fence, once registered again). */
  ready(): Promise<string>;
  /** The database's clock minus this process's, in ms, as the last heartbeat measured it. */
  clockOffsetMs(): number;
  stop(): Promise<void>;
}
