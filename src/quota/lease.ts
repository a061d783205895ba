import { randomUUID } from "node:crypto";
import type pg from "pg";
import { certainlyNotCommitted, DatabaseUnavailableError, isDataError, isTransientDbError } from "../db/faults.js";
import { backoffMs, type Backoff } from "../db/backoff.js";
import type { DatabaseHealth } from "../db/health.js";
import type { Pool } from "../db/pool.js";
import type { AccountMetrics } from "../metrics/recorders.js";
import { AccountGoneError, type DirectPostFn } from "./lease-direct-sql.js";
import { openLease, type SyncLease, type SyncLeaseFn, type SyncReply } from "./lease-sql.js";
import { AUTO_RESET_THRESHOLD, autoResetUseId } from "./auto-reset.js";
import type { AutoResetOutcome } from "./resets-sql.js";
import type { RefundFn } from "./refund-sql.js";
import type { Settling } from "./settling.js";
import type { AccountKind, ReserveInput, ReserveResult } from "./types.js";

// One process's escrow on one account (docs/billing.md, "Escrow"). In memory:
//   free         granted units no request holds: a reservation that fits is taken from here, no database
//   outstanding  units held by this process's unresolved requests
// and what the next sync will apply: settlements (each charge taken out of `free` as far as it went when it was
// queued), units to give back, and the requests waiting for a grant. The lease row's amount always equals free +
// outstanding + what the queued settlements took + giveBack: the database never holds less than this process
// promised.
//
// One sync in flight per lease; whatever arrives meanwhile goes into the next one, so settlements ready together
// share one commit (group commit) and their callers, which deliver the answers, wait for it. A sync that fails is
// retried for as long as the process lives: one the database refused (it certainly did not commit) is built
// again with whatever came since; one whose outcome is unknown (a cut connection, a timeout) is sent again exactly
// as it was, since it may have committed (it is applied once, by its sequence number).

export interface Waiter {
  input: ReserveInput;
  now: Date;
  resolve: (result: ReserveResult) => void;
  reject: (err: unknown) => void;
  /** The caller stopped waiting (its deadline passed): skipped when a grant comes, never admitted. */
  cancelled: boolean;
  /** The other processes were asked to give back for it once (give-back.ts): a refusal now is final. */
  askedOthers?: boolean;
  /** performance.now() at which its caller stops waiting (the 503 of database.request_timeout_ms). */
  deadlineAt: number;
}

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
  syncWithReset?: (
    client: pg.PoolClient,
    lease: Lease,
    payload: SyncLease,
    request: AutoResetRequest,
  ) => Promise<{ reply: SyncReply; outcome: AutoResetOutcome }>;
  /** Posts the resolutions of a lease that cannot sync any more, and ends it (lease-sql.ts). */
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
  fenced(lease: Lease): void;
  /** Whether the lease's account has stopped applying (its day is over, by the ledger's clock, which is the database's). */
  periodOver(lease: Lease): boolean;
  /** The period a reservation of `waiter`'s made now draws on: a waiter is admitted to the day it is admitted in. */
  periodNow(waiter: Waiter): string;
  /** When the account of a reservation made at `now` stops applying (a refusal's Retry-After). */
  resetsAt(now: Date): Date | null;
  /** The revision of the base credits this process states (account-kinds.ts, baseRevision). */
  baseRevision(lease: Lease): bigint;
  /** Admits a waiter: records its hold and returns the result. */
  admit(lease: Lease, waiter: Waiter): ReserveResult;
  /** A waiter of a lease that ended: reserve again (on a new lease). */
  retry(waiter: Waiter): void;
  /** The lease must not take new reservations any more. */
  retire(lease: Lease): void;
  /** Asks the other processes to give back their unused units on the lease's account (give-back.ts), waiting at most `maxWaitMs`. */
  askOthers(lease: Lease, others: number, maxWaitMs: number): Promise<void>;
  onSyncError(err: unknown, lease: Lease): void;
  /** Where syncs are timed and their definitive failures counted. */
  metrics: AccountMetrics;
}

/** What a lease asks of an automatic reset: checked again, and decided, under the account's lock. */
export interface AutoResetRequest {
  /** The use's id: one per lease and sync sequence, so a retried attempt is the same use. */
  id: string;
  weeklyBase: bigint;
  ownFree: bigint;
  need: bigint;
}

/** One sync as sent: kept whole while its outcome is unknown, so that a retry is the same statement. */
interface Attempt {
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

const DEMAND_WINDOW_MS = 1000;
/**
 * After an automatic reset could not be used (none left, the request would not fit, nothing spent), requests
 * under the threshold are admitted as usual for this long before the next attempt: an exhausted user with
 * automatic resets on costs one extra statement a second, not one per request. A grant is noticed within it.
 */
const RESET_RETRY_MS = 1000;
/** Retries of a transient fault back off exponentially, capped, with jitter (the first retry after 50-100 ms). */
const RETRY: Backoff = { firstMs: 50, maxMs: 2000, jitter: true };
/** The longest pause of a retry while a request waits for the sync (see pause()). */
const WAITING_RETRY_MS = 250;
/** After giving its units back on another process's request, a lease asks for no headroom for this long. */
const YIELD_MS = 1000;

export class Lease {
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

  /** From the last sync: the user has automatic resets on, and the account's remaining outside this lease's free units. */
  private autoReset = false;
  private outside = 0n;
  /** performance.now() before which no automatic reset is tried (RESET_RETRY_MS). */
  private resetRetryAt = 0;
  /** The next sync uses an automatic reset first, for a request of this size (its waiters were held back for it). */
  private resetFor: { weeklyBase: bigint; need: bigint } | undefined;
  /** The base credits (and their revision) of the last full sync applied: a sync stating the same may only post. */
  private appliedBase: { base: bigint | null; revision: bigint } | undefined;
  private seq = 0;
  private giveBack = 0n;
  private settling: Settling[] = [];
  /** Charges withdrawn while their statement was in flight, which then committed: refunded before the next sync. */
  private refunds: Settling[] = [];
  private waiters: Waiter[] = [];
  /** The sync in flight, or one to send again exactly (pinned). */
  private attempt: Attempt | undefined;
  private failures = 0;
  private running: Promise<void> | undefined;
  private again = false;
  private urgent = false;
  private wake: (() => void) | undefined;
  /** Cuts short the pause of a sync retrying a transient fault (see pause()). */
  private hurry: (() => void) | undefined;
  /** performance.now() until which this lease asks for no headroom (it gave back on another process's request). */
  private yieldUntil = 0;
  /** Told whether the give-backs not yet in a sync committed: they go with the next attempt. */
  private afterSync: ((committed: boolean) => void)[] = [];
  /** The charges of the direct post in flight (a poisoned lease's), which a deadline may withdraw. */
  private direct: Settling[] = [];
  private windowStartMs: number;
  private windowSum = 0n;
  private lastWindowSum = 0n;
  private wantTopUp = false;

  constructor(
    private readonly ctx: LeaseContext,
    readonly userId: string,
    readonly period: string,
    /** The base credits the reservations state (the plan's daily allowance); null for an account whose credits the ledger keeps. */
    public base: bigint | null,
    /** The user's plan revision `base` is from (escrow.ts leaseFor). */
    public planRevision: number,
    nowMs: number,
  ) {
    this.lastUsedMs = this.windowStartMs = nowMs;
  }

  /**
   * Takes `amount` from `free` if nothing waits before it; otherwise queues the call for a sync. A request that
   * may use a reset (`resettable`) goes to the database once the account is under the threshold.
   */
  tryTake(amount: bigint, nowMs: number, resettable: boolean): boolean {
    this.noteDemand(amount, nowMs);
    if (this.waiters.length > 0 || this.overshot || this.failing || this.free < amount || this.accountId === undefined || !this.ctx.fresh())
      return false;
    if (resettable && this.autoReset && this.underThreshold()) return false;
    this.free -= amount;
    this.outstanding += amount;
    // Top up before the free units run out, so that requests rarely wait for the database.
    if (this.free * 2n < this.demand()) {
      this.wantTopUp = true;
      this.schedule();
    }
    return true;
  }

  wait(waiter: Waiter): void {
    this.waiters.push(waiter);
    this.hurry?.();
    this.schedule();
  }

  /** A plan change: give everything free back and let the next sync grant under the new base credits. */
  restate(base: bigint | null, planRevision: number): void {
    this.planRevision = planRevision;
    if (base === this.base) return;
    this.base = base;
    this.giveBackFree();
  }

  /**
   * Queues a request's resolution: its units come back to `free` at once, then the charge (null: a release) is
   * covered from `free` as far as it goes; the rest is an overshoot, posted all the same. Its caller hears when
   * the sync carrying it committed.
   */
  settle(entry: Settling): void {
    if (!entry.expired) this.returnUnits(entry.resolution.amount);
    const charged = entry.resolution.charged;
    if (charged !== null && !this.ended) {
      entry.covered = charged < this.free ? charged : this.free;
      this.free -= entry.covered;
    }
    if (this.retired) this.giveBackFree();
    this.ctx.unsynced.count++;
    this.settling.push(entry);
    // An answer waits for this commit: a retry in progress does not make it wait out a long pause.
    if (entry.deadlineMs !== null) this.hurry?.();
    this.schedule(this.ctx.groupMs === 0);
  }

  /**
   * Withdraws a charge whose caller stopped waiting for its commit (docs/billing.md, "Settlement"); its caller is
   * answered at once that nothing was charged. Queued, it becomes a void now. In a statement in flight, it becomes a
   * void if that statement certainly did not commit, and is refunded if it did (refund-sql.ts).
   */
  withdraw(entry: Settling): void {
    if (entry.settled || entry.withdrawable === null) return;
    entry.withdrawal = entry.withdrawable;
    if (this.settling.includes(entry)) this.applyWithdrawal(entry);
    this.ctx.metrics.withdrawn();
    entry.answer("withdrawn");
  }

  /** Withdraws every charge past its deadline (the escrow's sweep asks). */
  withdrawOverdue(nowMs: number): void {
    for (const entry of this.settling) if (entry.overdue(nowMs)) this.withdraw(entry);
    for (const entry of this.attempt?.batch ?? []) if (entry.overdue(nowMs)) this.withdraw(entry);
    for (const entry of this.direct) if (entry.overdue(nowMs)) this.withdraw(entry);
  }

  /** A withdrawn charge that no statement committed: a void, with the record its caller gave. */
  private applyWithdrawal(entry: Settling): void {
    const withdrawable = entry.withdrawal;
    entry.withdrawal = undefined;
    if (!withdrawable || entry.resolution.charged === null) return;
    const covered = entry.toVoid(withdrawable);
    if (!this.ended) this.free += covered;
    if (this.retired) this.giveBackFree();
  }

  /** A request held longer than allowed: its units are free again (a late settle still posts its charge). */
  expire(amount: bigint): void {
    this.returnUnits(amount);
    if (this.retired) this.giveBackFree();
  }

  /**
   * Stops new reservations (they open a new lease, and the ones waiting here move to it) and gives everything
   * back; the lease closes once nothing is outstanding.
   */
  retire(): void {
    this.retired = true;
    this.ctx.retire(this);
    this.giveBackFree();
  }

  /**
   * This process was fenced: the expiry returns (or returned) this lease's units, so nothing more is admitted on
   * it; its outstanding requests still post their charges through it.
   */
  fence(): void {
    this.ended = true;
    this.retired = true;
    this.free = 0n;
    this.ctx.retire(this);
    for (const w of this.waiters.splice(0)) if (!w.cancelled) this.ctx.retry(w);
  }

  /**
   * Another process cannot cover a request on this account: give back what is free, and ask for no headroom for a
   * while so as not to take it straight back. Resolves with what was given back once that is committed.
   */
  yieldFree(): Promise<bigint> {
    this.yieldUntil = performance.now() + YIELD_MS;
    const given = this.free;
    if (given === 0n || this.ended || this.poisoned) return Promise.resolve(0n);
    this.giveBackFree();
    return new Promise((resolve) => this.afterSync.push((committed) => resolve(committed ? given : 0n)));
  }

  /** Gives the free units back (the lease stays open). */
  giveBackFree(): void {
    this.giveBack += this.free;
    this.free = 0n;
    this.schedule();
  }

  busy(): boolean {
    return this.running !== undefined;
  }

  /** Nothing left to do: it takes no reservations, no request holds units on it, and no statement is running or due. */
  finished(): boolean {
    return (this.ended || this.poisoned) && this.outstanding === 0n && !this.busy();
  }

  /** The account's remaining, this lease's free units included, is under the threshold, and a reset may be tried. */
  private underThreshold(): boolean {
    return this.outside + this.free < AUTO_RESET_THRESHOLD && performance.now() >= this.resetRetryAt;
  }

  /** Whether an answer waits for a charge of this lease to commit. */
  private answersWaiting(): boolean {
    for (const entry of this.settling) if (entry.deadlineMs !== null && !entry.settled) return true;
    for (const entry of [...(this.attempt?.batch ?? []), ...this.direct]) if (entry.deadlineMs !== null && !entry.settled) return true;
    return false;
  }

  /** Resolves when no sync of this lease is running or due. */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private returnUnits(amount: bigint) {
    this.outstanding -= amount;
    if (!this.ended) this.free += amount;
  }

  private noteDemand(amount: bigint, nowMs: number) {
    this.lastUsedMs = nowMs;
    const elapsed = nowMs - this.windowStartMs;
    if (elapsed >= DEMAND_WINDOW_MS) {
      this.lastWindowSum = elapsed < 2 * DEMAND_WINDOW_MS ? this.windowSum : 0n;
      this.windowSum = 0n;
      this.windowStartMs = nowMs;
    }
    this.windowSum += amount;
  }

  /** Units reserved over about the last second: how much a top-up asks for. */
  private demand(): bigint {
    return this.windowSum > this.lastWindowSum ? this.windowSum : this.lastWindowSum;
  }

  /**
   * Runs a sync soon: in the next turn of the event loop when `urgent` (a request waits, or units are to be
   * given back), else after `groupMs`, so that settlements under load share one commit.
   */
  private schedule(urgent = true): void {
    if (urgent) {
      this.urgent = true;
      this.wake?.();
    }
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop();
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.again = false;
        await new Promise<void>((resolve) => {
          if (this.urgent) return void setImmediate(resolve);
          const timer = setTimeout(resolve, this.ctx.groupMs);
          this.wake = () => {
            clearTimeout(timer);
            setImmediate(resolve);
          };
        });
        this.wake = undefined;
        this.urgent = false;
        await this.syncOnce();
      } while (this.again);
    } finally {
      // In the same turn as the last check of `again`: a schedule() after it starts a new loop.
      this.running = undefined;
    }
  }

  /** The next sync: everything queued, or undefined when there is nothing to say to the database. */
  private nextAttempt(): Attempt | undefined {
    let waiters = this.waiters.splice(0).filter((w) => !w.cancelled);
    // The day is over: nothing more is asked for here; the waiters go to the new day's lease.
    if (!this.retired && this.ctx.periodOver(this)) {
      this.retired = true;
      this.ctx.retire(this);
      this.giveBackFree();
    }
    if (this.retired && waiters.length > 0) {
      for (const w of waiters) this.ctx.retry(w);
      waiters = [];
    }
    const batch = this.settling.splice(0);
    const need = waiters.reduce((sum, w) => sum + w.input.amount, 0n);
    const close = this.retired && !this.ended && this.outstanding === 0n && waiters.length === 0;
    // A lease closes holding nothing: whatever is still free goes back in the same statement.
    if (close && this.free > 0n) {
      this.giveBack += this.free;
      this.free = 0n;
    }
    const demand = this.demand();
    // A top-up asks for about a second of this lease's demand; never in a sync that gives units back unasked.
    const topUp = need > 0n || (this.wantTopUp && this.giveBack === 0n);
    this.wantTopUp = false;
    const yielding = performance.now() < this.yieldUntil;
    const headroom = this.retired || this.ended || !topUp || yielding ? 0n : max(demand, 4n * need);
    let post = 0n;
    let take = 0n;
    for (const s of batch) {
      if (s.resolution.charged === null) continue;
      post += s.resolution.charged;
      take += s.covered;
    }
    if (batch.length === 0 && waiters.length === 0 && this.giveBack === 0n && headroom === 0n && !close) return undefined;
    const baseRevision = this.ctx.baseRevision(this);
    const touch = !this.ctx.fresh();
    const payload: SyncLease = {
      leaseId: this.id,
      seq: this.seq + 1,
      instanceId: this.instanceId,
      base: this.base,
      baseRevision,
      post,
      take,
      giveBack: this.giveBack,
      need,
      headroom,
      close,
      touch,
      resolutions: batch.map((s) => s.resolution),
      postOnly:
        need === 0n &&
        headroom === 0n &&
        this.giveBack === 0n &&
        !close &&
        !touch &&
        !this.resetFor &&
        this.appliedBase?.base === this.base &&
        this.appliedBase.revision === baseRevision,
    };
    this.giveBack = 0n;
    const resetFor = this.resetFor;
    this.resetFor = undefined;
    const reset = resetFor && {
      id: autoResetUseId(this.id, payload.seq),
      weeklyBase: resetFor.weeklyBase,
      ownFree: this.free,
      need: resetFor.need,
    };
    return { payload, batch, waiters, reset, pinned: false, afterSync: this.afterSync.splice(0) };
  }

  private async syncOnce(): Promise<void> {
    if (this.poisoned) return this.postQueued();
    if (this.refunds.length > 0 && !(await this.refundWithdrawn())) return;
    // An attempt sent again takes nothing queued since it was built, and the schedule() of what was queued meanwhile
    // was spent on this turn of the loop: without another turn, it would wait for the lease's next request.
    if (this.attempt) this.again = true;
    const attempt = this.attempt ?? this.nextAttempt();
    if (!attempt) return;
    this.attempt = attempt;
    const sentAt = performance.now();
    attempt.firstSentAt ??= sentAt;
    // A stalled database fails no statement: past this, it is reported, and reservations stop using free units.
    const slow = setTimeout(() => {
      this.failing = true;
      this.ctx.health.failed(new DatabaseUnavailableError(), "lease sync");
    }, this.ctx.slowMs);
    let sent = false;
    let reply: SyncReply;
    let outcome: AutoResetOutcome | undefined;
    try {
      if (this.accountId === undefined) {
        this.instanceId = await this.ctx.instanceId();
        attempt.payload.instanceId = this.instanceId;
        const opening = {
          leaseId: this.id,
          userId: this.userId,
          kind: this.ctx.kind,
          period: this.period,
          base: this.base,
          baseRevision: attempt.payload.baseRevision,
          instanceId: this.instanceId,
        };
        this.accountId = await openLease(this.ctx.pool, opening);
      }
      // A connection first: failing to get one, nothing was sent (the attempt certainly did not commit).
      const client = await this.ctx.pool.connect();
      sent = true;
      if (attempt.reset && this.ctx.syncWithReset) {
        ({ reply, outcome } = await this.ctx.syncWithReset(client, this, attempt.payload, attempt.reset));
      } else {
        try {
          reply = await this.ctx.sync(client, attempt.payload);
          client.release();
        } catch (err) {
          // As pool.query does: a connection that failed a statement is not reused.
          client.release(err instanceof Error ? err : new Error(String(err)));
          throw err;
        }
      }
    } catch (err) {
      return this.attemptFailed(attempt, err, sent);
    } finally {
      clearTimeout(slow);
    }
    this.attempt = undefined;
    this.failing = false;
    this.failures = 0;
    this.ctx.health.ok();
    this.applied(attempt, reply, outcome, sentAt, attempt.firstSentAt ?? sentAt);
  }

  /**
   * A transient fault is retried for as long as the process lives: a sync the database refused (it certainly did
   * not commit) is built again with whatever came since, and its charges whose callers stopped waiting are
   * withdrawn; one whose outcome is unknown is sent again as it was. Anything else, or shutdown's grace running
   * out, ends the lease (poison).
   */
  private async attemptFailed(attempt: Attempt, err: unknown, sent: boolean): Promise<void> {
    if (isTransientDbError(err) && !this.ctx.givingUp()) {
      this.ctx.health.failed(err, "lease sync");
      this.failing = true;
      if (sent && !certainlyNotCommitted(err)) attempt.pinned = true;
      if (!attempt.pinned) this.requeue(attempt);
      await this.pause(backoffMs(++this.failures, RETRY));
      this.again = true;
      return;
    }
    this.attempt = undefined;
    this.ctx.metrics.syncFailed();
    this.poisoned = true;
    this.ctx.retire(this);
    this.ctx.onSyncError(err, this);
    // What it gave back is not committed by a sync (the direct post ends the lease and returns its units).
    for (const done of [...attempt.afterSync, ...this.afterSync.splice(0)]) done(false);
    // A lease that never opened cannot take requests; one that did is replaced by a new lease.
    for (const w of attempt.waiters) {
      if (w.cancelled) continue;
      if (this.accountId === undefined) w.reject(err);
      else this.ctx.retry(w);
    }
    // Never a charge rejected for good: they post straight to the account, and the lease ends, always. Those whose
    // callers were told they were withdrawn post as voids, or are refunded if a send of this attempt committed.
    if (this.accountId !== undefined) await this.postDirectly(attempt.batch, attempt.pinned);
  }

  /**
   * Refunds the charges withdrawn after their statement committed. A transient fault is retried (false: the loop
   * comes back after the pause); anything else is logged and the refund dropped (its rows stay as charged).
   */
  private async refundWithdrawn(): Promise<boolean> {
    const entries = this.refunds.splice(0);
    try {
      await this.ctx.refund(
        this.ctx.pool,
        entries.map((e) => e.resolution),
      );
      this.ctx.health.ok();
      return true;
    } catch (err) {
      if (isTransientDbError(err) && !this.ctx.givingUp()) {
        this.ctx.health.failed(err, "lease refund");
        // Retried as they are: the refund of a hold no longer posted is no second one.
        this.refunds.unshift(...entries);
        await this.pause(backoffMs(++this.failures, RETRY));
        this.again = true;
        return false;
      }
      this.ctx.onSyncError(err, this);
      return true;
    }
  }

  /** An attempt that certainly did not commit: its parts go back, to be sent with whatever came since. */
  private requeue(attempt: Attempt): void {
    this.attempt = undefined;
    this.settling.unshift(...attempt.batch);
    this.giveBack += attempt.payload.giveBack;
    this.waiters.unshift(...attempt.waiters.filter((w) => !w.cancelled));
    this.afterSync.unshift(...attempt.afterSync);
    if (attempt.reset) this.resetFor = { weeklyBase: attempt.reset.weeklyBase, need: attempt.reset.need };
    for (const entry of attempt.batch) if (entry.withdrawal) this.applyWithdrawal(entry);
  }

  private applied(attempt: Attempt, reply: SyncReply, outcome: AutoResetOutcome | undefined, sentAt: number, firstSentAt: number): void {
    const { payload, batch, waiters } = attempt;
    this.seq = payload.seq;
    if (!payload.postOnly) this.appliedBase = { base: payload.base, revision: payload.baseRevision };
    this.ctx.metrics.synced((performance.now() - sentAt) / 1000);
    if (payload.touch && !reply.fenced) this.ctx.beaten(firstSentAt);
    this.overshot = reply.credits + reply.restored - reply.posted - reply.pending < 0n;
    if (!reply.live || payload.close) {
      this.ended = true;
      this.free = 0n;
      this.ctx.retire(this);
    } else {
      this.free += reply.granted;
    }
    this.ctx.unsynced.count -= batch.length;
    for (const entry of batch) {
      // What a refunded charge took from `free` went with it to the account, which the refund gives back (not to
      // this lease).
      this.committed(entry);
    }
    if (this.refunds.length > 0) this.schedule();
    for (const done of attempt.afterSync) done(true);
    if (reply.fenced) this.ctx.fenced(this);
    this.outside = reply.credits + reply.restored - reply.posted - reply.pending;
    this.autoReset = reply.autoReset;
    if (outcome) this.afterReset(outcome);
    else if (this.wantsReset(waiters)) {
      // The next sync uses a reset first, in its own transaction, and grants these waiters from the restored day.
      this.waiters.unshift(...waiters);
      this.schedule();
      return;
    }
    this.admitWaiters(waiters, reply);
    // Retired while this sync was in flight: what it granted beyond its waiters is not this lease's to keep.
    if (this.retired && !this.ended && this.free > 0n) this.giveBackFree();
  }

  /**
   * The automatic reset (docs/billing.md, "Automatic resets"): when the account is under the threshold and a
   * waiter may use a reset, the waiters are held back and the next sync uses one first, in the same transaction as
   * the grant that admits them.
   */
  private wantsReset(waiters: Waiter[]): boolean {
    if (!this.ctx.syncWithReset || !this.autoReset || this.ended || this.retired || !this.underThreshold()) return false;
    const first = waiters.find((w) => !w.cancelled && w.input.weeklyResets != null);
    if (!first) return false;
    this.resetFor = { weeklyBase: first.input.weeklyResets!, need: first.input.amount };
    return true;
  }

  private afterReset(outcome: AutoResetOutcome): void {
    if (outcome.outcome === "used" || outcome.outcome === "not_needed") return;
    if (outcome.outcome === "disabled") this.autoReset = false;
    else this.resetRetryAt = performance.now() + RESET_RETRY_MS;
  }

  /**
   * The pause before a retry. A request waiting for the attempt (a reservation in it, sent again when its outcome is
   * unknown) keeps it short from the start; one that starts waiting for this lease meanwhile (a reservation, or an
   * answer waiting for its charge's commit) cuts it short (to WAITING_RETRY_MS after the fault): otherwise, once the
   * database is back, it would wait out the rest of a pause of up to RETRY.maxMs, and be refused 503 at
   * database.request_timeout_ms although the database answers. Not shorter, so that a stream of requests during an
   * outage is not a stream of attempts. With nothing waiting (releases, give-backs) the backoff runs its course.
   */
  private pause(ms: number): Promise<void> {
    const waiting = this.waiters.length > 0 || this.attempt?.waiters.some((w) => !w.cancelled) || this.answersWaiting();
    if (waiting) ms = Math.min(ms, WAITING_RETRY_MS);
    const faultAt = performance.now();
    return new Promise((resolve) => {
      const done = () => {
        this.hurry = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.hurry = () => {
        this.hurry = undefined;
        const left = WAITING_RETRY_MS - (performance.now() - faultAt);
        if (WAITING_RETRY_MS >= ms) return;
        clearTimeout(timer);
        setTimeout(done, Math.max(0, left));
      };
    });
  }

  /**
   * Posts settlements straight to the account and ends this lease (an empty call only ends it): for a lease whose
   * sync got a definitive answer, and for its requests resolved afterwards. Retried for as long as the process
   * lives, whatever the error: a journal record the database refuses (a data error) is dropped so that the charge
   * still posts; only an account that no longer exists (its user was deleted) or shutdown's grace running out
   * gives up (the meter logs each charge given up as SETTLEMENT_FAILED). A charge withdrawn meanwhile (its caller
   * stopped waiting) posts as a void while no statement carrying it can have committed (`mayHaveCommitted`: a
   * send of the sync it came from, or of this post, whose outcome is unknown), else it is refunded after.
   */
  private async postDirectly(batch: Settling[], mayHaveCommitted: boolean): Promise<void> {
    this.direct = batch;
    let withRecords = true;
    for (let attempt = 1; ; attempt++) {
      if (!mayHaveCommitted) for (const entry of batch) this.applyWithdrawal(entry);
      try {
        const resolutions = batch.map((s) => s.resolution);
        await this.ctx.directPost(this.ctx.pool, this.id, this.accountId!, this.instanceId, resolutions, withRecords);
        this.ctx.health.ok();
        break;
      } catch (err) {
        if (!certainlyNotCommitted(err)) mayHaveCommitted = true;
        if (err instanceof AccountGoneError || this.ctx.givingUp()) {
          this.direct = [];
          this.ctx.unsynced.count -= batch.length;
          for (const entry of batch) entry.fail(err);
          return;
        }
        if (isDataError(err) && withRecords) {
          this.ctx.onSyncError(err, this);
          withRecords = false;
          continue;
        }
        if (isTransientDbError(err)) this.ctx.health.failed(err, "lease direct post");
        else this.ctx.onSyncError(err, this);
        await this.pause(backoffMs(attempt, RETRY));
      }
    }
    this.direct = [];
    this.ctx.unsynced.count -= batch.length;
    for (const entry of batch) this.committed(entry);
    if (this.refunds.length > 0) this.schedule();
  }

  /** A statement carrying the entry committed: its caller hears so, or, told it was withdrawn, it is refunded. */
  private committed(entry: Settling): void {
    if (!entry.withdrawal) return entry.answer("committed");
    entry.toVoid(entry.withdrawal);
    entry.withdrawal = undefined;
    this.refunds.push(entry);
  }

  /**
   * A request of this (poisoned) lease resolved: its charge posts straight to the account, by the lease's loop
   * (so that flush and close wait for it, and its deadline withdraws it).
   */
  settleDirectly(entry: Settling): void {
    if (!entry.expired) this.outstanding -= entry.resolution.amount;
    this.ctx.unsynced.count++;
    this.settling.push(entry);
    this.schedule();
  }

  /**
   * In arrival order; after the first refusal the later ones are refused too (a refused caller is not overtaken).
   * A waiter whose day ended while it waited is admitted on the new day's account, never on the old one.
   */
  private admitWaiters(waiters: Waiter[], reply: SyncReply) {
    let refused = false;
    for (const [i, w] of waiters.entries()) {
      // Its caller has its answer (the deadline's 503); the units stay free for the next one.
      if (w.cancelled) continue;
      if (this.ended || this.ctx.periodNow(w) !== this.period) {
        this.ctx.retry(w);
        continue;
      }
      if (!refused && !this.overshot && this.free >= w.input.amount) {
        w.resolve(this.ctx.admit(this, w));
        continue;
      }
      // Other processes may hold units they do not use: they give them back, and this one syncs again, before
      // anyone is refused (give-back.ts). Once per waiter.
      if (!refused && !w.askedOthers && !this.overshot && !this.retired && reply.others > 0) {
        const rest = waiters.slice(i).filter((x) => !x.cancelled);
        for (const x of rest) x.askedOthers = true;
        // Half of what is left to the first of them: the other half is for the sync after the answers.
        void this.ctx.askOthers(this, reply.others, (w.deadlineAt - performance.now()) / 2).then(() => {
          this.waiters.unshift(...rest);
          this.schedule();
        });
        return;
      }
      refused = true;
      w.resolve({
        ok: false,
        allowance: reply.credits + reply.restored,
        used: reply.posted,
        reserved: reply.pending - this.free,
        resetsAt: this.ctx.resetsAt(w.now),
      });
    }
  }

  /** Takes `amount` for an admitted waiter (the grant covered it). */
  hold(amount: bigint): void {
    this.free -= amount;
    this.outstanding += amount;
  }

  /** What a poisoned lease still had queued: waiters reserve again, settlements post straight to the account. */
  private async postQueued(): Promise<void> {
    for (const w of this.waiters.splice(0)) if (!w.cancelled) this.ctx.retry(w);
    if (this.refunds.length > 0 && !(await this.refundWithdrawn())) return;
    const batch = this.settling.splice(0);
    if (batch.length > 0) await this.postDirectly(batch, false);
  }
}

const max = (a: bigint, b: bigint) => (a > b ? a : b);
