import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { DatabaseHealth } from "../db/health.js";
import type { Pool } from "../db/pool.js";
import type { AccountMetrics } from "../metrics/recorders.js";
import { LeaseAutoReset, type AutoResetRequest } from "./lease-auto-reset.js";
import type { DirectPostFn } from "./lease-direct-sql.js";
import type { SyncLease, SyncLeaseFn, SyncReply } from "./lease-sql.js";
import { SyncLoop } from "./lease-sync-loop.js";
import type { Waiter } from "./lease-waiter.js";
import type { AutoResetOutcome } from "./resets-sql.js";
import type { RefundFn } from "./refund-sql.js";
import type { Settling } from "./settling.js";
import type { AccountKind, ReserveResult } from "./types.js";

// One process's escrow on one account (docs/billing.md, "Escrow"). In memory:
//   free         granted units no request holds: a reservation that fits is taken from here, no database
//   outstanding  units held by this process's unresolved requests
// and what the next sync will apply: settlements (each charge taken out of `free` as far as it went when it was
// queued), units to give back, and the requests waiting for a grant. The lease row's amount always equals free +
// outstanding + what the queued settlements took + giveBack: the database never holds less than this process
// promised.
//
// The lease is one class in layers, each a concern of its own: this state and what the escrow gives it, the
// settlements (lease-settlement.ts), admission (lease-admission.ts), the sync with the database
// (lease-sync-attempts.ts), and what the escrow ends it with (lease.ts).

export interface LeaseContext {
  pool: Pool;
  kind: AccountKind;
  /** The id of this process to open a lease under (a new one after a fence). */
  instanceId(): Promise<string>;
  sync: SyncLeaseFn;
  /**
   * A sync that first uses a reserve reset automatically, in the same transaction (auto-reset.ts), on a connection
   * taken from the pool for it (released or destroyed there).
   */
  syncWithReset?(
    client: pg.PoolClient,
    lease: LeaseState,
    payload: SyncLease,
    request: AutoResetRequest,
  ): Promise<{ reply: SyncReply; outcome: AutoResetOutcome }>;
  /** Posts the resolutions of a lease that cannot sync any more, and ends it (lease-direct-sql.ts). */
  directPost: DirectPostFn;
  /** Refunds charges withdrawn after their statement committed (refund-sql.ts). */
  refund: RefundFn;
  /** Where transient faults are reported (they are retried for as long as the process lives). */
  health: DatabaseHealth;
  /** Shutdown's grace ran out: stop retrying, what is still unwritten is lost (and logged). */
  givingUp(): boolean;
  /** Settlements of this process not yet committed, over every lease (a metric). */
  unsynced: { count: number };
  /** How long a settlement may wait for others to share its commit (0: the next turn of the event loop). */
  groupMs: number;
  /** A statement still unanswered after this long is reported as a fault (a stalled database fails nothing). */
  slowMs: number;
  /** Whether this process's heartbeat is recent enough to admit from free units (instances.ts, "Fencing"). */
  fresh(): boolean;
  /** A sync that renewed the heartbeat, sent at `sentAt` (performance.now()), committed. */
  beaten(sentAt: number): void;
  /** The database answered that the process id `lease` was opened under is fenced. */
  fenced(lease: LeaseState): void;
  /** Whether the lease's account has stopped applying (its day is over, by the ledger's clock, which is the database's). */
  periodOver(lease: LeaseState): boolean;
  /** The period a reservation of `waiter`'s made now draws on: a waiter is admitted to the day it is admitted in. */
  periodNow(waiter: Waiter): string;
  /** When the account of a reservation made at `now` stops applying (a refusal's Retry-After). */
  resetsAt(now: Date): Date | null;
  /** The revision of the base credits this process states (account-kinds.ts, baseRevision). */
  baseRevision(lease: LeaseState): bigint;
  /** Admits a waiter: records its hold and returns the result. */
  admit(lease: LeaseState, waiter: Waiter): ReserveResult;
  /** A waiter of a lease that ended: reserve again (on a new lease). */
  retry(waiter: Waiter): void;
  /** The lease must not take new reservations any more. */
  retire(lease: LeaseState): void;
  /**
   * Asks the other processes to give back their unused units on the lease's account, up to `shortfall` each
   * (give-back.ts), waiting at most `maxWaitMs`.
   */
  askOthers(lease: LeaseState, others: number, shortfall: bigint, maxWaitMs: number): Promise<void>;
  /** Tells the other processes that a request of `amount` on the lease's account was refused after they were all asked. */
  tellSpent(lease: LeaseState, amount: bigint): void;
  onSyncError(err: unknown, lease: LeaseState): void;
  /** Where syncs are timed and their definitive failures counted. */
  metrics: AccountMetrics;
}

/** An account's allowance and its debits, as a sync read them. */
export type AccountFigures = Pick<SyncReply, "credits" | "restored" | "posted" | "pending">;

/** One sync as sent: kept whole while its outcome is unknown, so that a retry is the same statement. */
export interface Attempt {
  payload: SyncLease;
  batch: Settling[];
  waiters: Waiter[];
  reset: AutoResetRequest | undefined;
  /** A statement carrying it was sent and its outcome is unknown: only its success ends the attempt. */
  pinned: boolean;
  /**
   * When it was first sent (performance.now()): a retry of a renewal that had committed renews nothing, so the
   * heartbeat it stands for is the first send's.
   */
  firstSentAt?: number;
  /** Told whether the give-backs it carries committed (yieldFree). */
  afterSync: ((committed: boolean) => void)[];
}

export abstract class LeaseState {
  readonly id = randomUUID();
  accountId: string | undefined;
  /** The process id the lease was opened under (its holds' instance_id). */
  instanceId = "";
  free = 0n;
  outstanding = 0n;
  /** The account was overdrawn at the last sync: everything waits for a sync, which refuses until it is not. */
  overshot = false;
  /** No new reservations (retired); `ended` once the database says the lease is over. */
  retired = false;
  ended = false;
  /**
   * The database answered this lease's sync with a definitive error: the lease was ended and its settlements
   * post straight to the account (postDirectly), now and for its requests still outstanding.
   */
  poisoned = false;
  /**
   * A statement of this lease failed, or is slow, and none succeeded since: reservations wait for the database
   * instead of taking free units, so that no upstream is called for an answer whose charge could not be committed.
   */
  failing = false;
  lastUsedMs: number;

  protected readonly autoReset = new LeaseAutoReset();
  /** The base credits (and their revision) of the last full sync applied: a sync stating the same may only post. */
  protected appliedBase: { base: bigint | null; revision: bigint } | undefined;
  protected seq = 0;
  protected giveBack = 0n;
  /**
   * How much of `giveBack` another process asked for (yieldFree): a sync that gives back only that goes on the lease
   * row (lease-sql.ts, postOnlyStatement); any other give-back is a full sync, which leaves the account row exact.
   */
  protected askedGiveBack = 0n;
  protected settling: Settling[] = [];
  /** Charges withdrawn while their statement was in flight, which then committed: refunded before the next sync. */
  protected refunds: Settling[] = [];
  protected waiters: Waiter[] = [];
  /** The sync in flight, or one to send again exactly (pinned). */
  protected attempt: Attempt | undefined;
  protected failures = 0;
  protected readonly loop: SyncLoop;
  /** performance.now() until which this lease asks for no headroom (it gave back on another process's request). */
  protected yieldUntil = 0;
  /**
   * Until then (performance.now()) the account counts as spent for requests of `spentAmount` units or more: one of
   * that size was refused after every process was asked (lease-admission.ts, SPENT_MS).
   */
  protected spentUntil = 0;
  protected spentAmount = 0n;
  /** The account's figures as the last sync read them: what a refusal states. */
  protected figures: AccountFigures | undefined;
  /** Told whether the give-backs not yet in a sync committed: they go with the next attempt. */
  protected afterSync: ((committed: boolean) => void)[] = [];
  /** The charges of the direct post in flight (a poisoned lease's), which a deadline may withdraw. */
  protected direct: Settling[] = [];
  protected windowStartMs: number;
  protected windowSum = 0n;
  protected lastWindowSum = 0n;
  protected wantTopUp = false;

  constructor(
    protected readonly ctx: LeaseContext,
    readonly userId: string,
    readonly period: string,
    /** The base credits the reservations state (the plan's daily allowance); null for an account whose credits the ledger keeps. */
    public base: bigint | null,
    /** The user's plan revision `base` is from (escrow.ts leaseFor). */
    public planRevision: number,
    nowMs: number,
  ) {
    this.loop = new SyncLoop(ctx.groupMs, () => this.syncOnce());
    this.lastUsedMs = this.windowStartMs = nowMs;
  }

  /** The next sync, or what a poisoned lease still has to post (lease-sync-attempts.ts). */
  protected abstract syncOnce(): Promise<void>;

  /** Takes `amount` for an admitted waiter (the grant covered it). */
  hold(amount: bigint): void {
    this.free -= amount;
    this.outstanding += amount;
  }

  /** Gives the free units back (the lease stays open). */
  giveBackFree(): void {
    this.giveBack += this.free;
    this.free = 0n;
    this.loop.schedule();
  }

  busy(): boolean {
    return this.loop.busy();
  }

  /** Nothing left to do: it takes no reservations, no request holds units on it, and no statement is running or due. */
  finished(): boolean {
    return (this.ended || this.poisoned) && this.outstanding === 0n && !this.busy();
  }

  /** Resolves when no sync of this lease is running or due. */
  idle(): Promise<void> {
    return this.loop.idle();
  }

  protected returnUnits(amount: bigint) {
    this.outstanding -= amount;
    if (!this.ended) this.free += amount;
  }

  /** The pause before a retry (SyncLoop.pause): short while a request waits for this lease. */
  protected pause(ms: number): Promise<void> {
    const waiting = this.waiters.length > 0 || this.attempt?.waiters.some((w) => !w.cancelled) || this.answersWaiting();
    return this.loop.pause(ms, waiting);
  }

  /** Whether an answer waits for a charge of this lease to commit. */
  private answersWaiting(): boolean {
    for (const entry of this.settling) if (entry.deadlineMs !== null && !entry.settled) return true;
    for (const entry of [...(this.attempt?.batch ?? []), ...this.direct]) if (entry.deadlineMs !== null && !entry.settled) return true;
    return false;
  }
}
