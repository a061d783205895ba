import { randomUUID } from "node:crypto";
import { DatabaseUnavailableError, isDataError, isTransientDbError } from "../db/faults.js";
import type { DatabaseHealth } from "../db/health.js";
import type { Pool } from "../db/pool.js";
import type { AccountMetrics } from "../metrics/recorders.js";
import { openLease, type DirectPostFn, type Resolution, type SyncLease, type SyncLeaseFn, type SyncReply } from "./lease-sql.js";
import { AUTO_RESET_THRESHOLD, autoResetUseId } from "./auto-reset.js";
import type { AutoResetOutcome } from "./resets-sql.js";
import type { AccountKind, ReserveInput, ReserveResult } from "./types.js";

// One process's escrow on one account (docs/billing.md, "Escrow"). In memory:
//   free         granted units no request holds: a reservation that fits is taken from here, no database
//   outstanding  units held by this process's unresolved requests
// and what the next sync will apply: charges to post (`take` of them out of the lease), units to give back,
// and the requests waiting for a grant. The lease row's amount always equals free + outstanding + take +
// giveBack of what is not yet synced: the database never holds less than this process promised.
// One sync in flight per lease; whatever arrives meanwhile goes into the next one.

export interface Waiter {
  input: ReserveInput;
  now: Date;
  resolve: (result: ReserveResult) => void;
  reject: (err: unknown) => void;
  /** The caller stopped waiting (its deadline passed): skipped when a grant comes, never admitted. */
  cancelled: boolean;
}

interface Settling {
  resolution: Resolution;
  resolve: () => void;
  reject: (err: unknown) => void;
}

export interface LeaseContext {
  pool: Pool;
  kind: AccountKind;
  instanceId: string;
  sync: SyncLeaseFn;
  /** Posts the resolutions of a lease that cannot sync any more, and ends it (lease-sql.ts). */
  directPost: DirectPostFn;
  /** Where transient faults are reported (they are retried for as long as the process lives). */
  health: DatabaseHealth;
  /** Shutdown's grace ran out: stop retrying, what is still unwritten is lost (and logged). */
  givingUp(): boolean;
  /** Settlements of this process not yet committed, over every lease; admission stops above a bound. */
  unsynced: { count: number };
  /** How long a settlement may wait for others to share its sync. */
  lingerMs: number;
  /** A statement whose answer takes longer is abandoned and retried. */
  statementTimeoutMs: number | undefined;
  /** A statement still unanswered after this long is reported as a fault (a stalled database fails nothing). */
  slowMs: number;
  /** Whether this process's heartbeat is recent enough to admit from free units (instances.ts, "Fencing"). */
  fresh(): boolean;
  /** A sync that renewed the heartbeat, sent at `sentAt` (performance.now()), committed. */
  beaten(sentAt: number): void;
  /** When the account of a reservation made at `now` stops applying. */
  resetsAt(now: Date): Date | null;
  /** Admits a waiter: records its hold and returns the result. */
  admit(lease: Lease, waiter: Waiter): ReserveResult;
  /** A waiter of a lease that ended: reserve again (on a new lease). */
  retry(waiter: Waiter): void;
  /** The lease must not take new reservations any more. */
  retire(lease: Lease): void;
  onSyncError(err: unknown, lease: Lease): void;
  /** Where syncs are timed and their definitive failures counted. */
  metrics: AccountMetrics;
  /** Uses a reserve reset automatically (auto-reset.ts); absent for kinds no reset restores. */
  autoReset?: (lease: Lease, request: AutoResetRequest) => Promise<AutoResetOutcome>;
}

/** What a lease asks of an automatic reset: checked again, and decided, under the account's lock. */
export interface AutoResetRequest {
  /** The use's id: one per lease and sync sequence, so a retried attempt is the same use. */
  id: string;
  weeklyBase: bigint;
  ownFree: bigint;
  need: bigint;
}

const DEMAND_WINDOW_MS = 1000;
/**
 * After an automatic reset could not be used (none left, the request would not fit, nothing spent), requests
 * under the threshold are admitted as usual for this long before the next attempt: an exhausted user with
 * automatic resets on costs one extra statement a second, not one per request. A grant is noticed within it.
 */
const RESET_RETRY_MS = 1000;
/** Retries of a transient fault back off exponentially from this, capped, with jitter. */
const RETRY_MIN_MS = 50;
const RETRY_MAX_MS = 2000;
/** The longest pause of a retry while a request waits for the sync (see pause()). */
const WAITING_RETRY_MS = 250;
const backoffMs = (attempt: number) => Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** Math.min(attempt, 10)) * (0.5 + Math.random() / 2);

export class Lease {
  readonly id = randomUUID();
  accountId: string | undefined;
  free = 0n;
  outstanding = 0n;
  /** The account was overdrawn at the last sync: everything waits for a sync, which refuses until it is not. */
  overshot = false;
  /** No new reservations (retired); `ended` once the database says the lease is over. */
  retired = false;
  ended = false;
  /**
   * The database answered this lease's sync with a definitive error: the lease was ended and its settlements
   * post straight to the account (postDirect), now and for its requests still outstanding.
   */
  poisoned = false;
  lastUsedMs: number;

  /** From the last sync: the user has automatic resets on, and the account's remaining outside this lease's free units. */
  private autoReset = false;
  private outside = 0n;
  /** performance.now() before which no automatic reset is tried (RESET_RETRY_MS). */
  private resetRetryAt = 0;
  private seq = 0;
  private post = 0n;
  private take = 0n;
  private giveBack = 0n;
  private settling: Settling[] = [];
  private waiters: Waiter[] = [];
  private running: Promise<void> | undefined;
  private again = false;
  private urgent = false;
  private wake: (() => void) | undefined;
  /** Cuts short the pause of a sync retrying a transient fault (see pause()). */
  private hurry: (() => void) | undefined;
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
    if (this.waiters.length > 0 || this.overshot || this.free < amount || this.accountId === undefined || !this.ctx.fresh()) return false;
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
  rebase(base: bigint | null): void {
    this.base = base;
    this.giveBackFree();
  }

  /**
   * Resolves a request held on this lease: its units come back to `free`, then the charge (null: a release)
   * is covered from `free` as far as it goes; the rest is an overshoot, posted all the same.
   */
  resolve(resolution: Resolution, expired: boolean): Promise<void> {
    if (!expired) this.returnUnits(resolution.amount);
    if (resolution.charged !== null) {
      const covered = this.ended ? 0n : resolution.charged < this.free ? resolution.charged : this.free;
      this.free -= covered;
      this.take += covered;
      this.post += resolution.charged;
    }
    if (this.retired) this.giveBackFree();
    return new Promise((resolve, reject) => {
      this.ctx.unsynced.count++;
      this.settling.push({ resolution, resolve, reject });
      this.schedule(false);
    });
  }

  /** A request held longer than allowed: its units are free again (a late settle still posts its charge). */
  expire(amount: bigint): void {
    this.returnUnits(amount);
    if (this.retired) this.giveBackFree();
  }

  /** Stops new reservations and gives everything back; the lease closes once nothing is outstanding. */
  retire(): void {
    this.retired = true;
    this.giveBackFree();
    this.schedule();
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

  /** The account's remaining, this lease's free units included, is under the threshold, and a reset may be tried. */
  private underThreshold(): boolean {
    return this.outside + this.free < AUTO_RESET_THRESHOLD && performance.now() >= this.resetRetryAt;
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
   * given back), else after the linger (`lingerMs`), so that settlements under load share one commit instead of
   * each paying for its own.
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
          const timer = setTimeout(resolve, this.ctx.lingerMs);
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

  private async syncOnce(): Promise<void> {
    if (this.poisoned) return this.postQueued();
    const waiters = this.waiters.splice(0).filter((w) => !w.cancelled);
    const settling = this.settling.splice(0);
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
    const headroom = this.retired || this.ended || !topUp ? 0n : max(demand, 4n * need);
    const touch = !this.ctx.fresh();
    const payload: SyncLease = {
      leaseId: this.id,
      seq: this.seq + 1,
      instanceId: this.ctx.instanceId,
      base: this.base,
      post: this.post,
      take: this.take,
      giveBack: this.giveBack,
      need,
      headroom,
      close,
      touch,
      resolutions: settling.map((s) => s.resolution),
    };
    const idle =
      settling.length === 0 && waiters.length === 0 && payload.post === 0n && payload.giveBack === 0n && headroom === 0n && !close;
    if (idle) return;
    this.post = this.take = this.giveBack = 0n;

    let reply: SyncReply;
    const sentAt = performance.now();
    try {
      if (this.accountId === undefined) {
        const opening = {
          leaseId: this.id,
          userId: this.userId,
          kind: this.ctx.kind,
          period: this.period,
          base: this.base,
          instanceId: this.ctx.instanceId,
        };
        this.accountId = await this.withRetries(() => openLease(this.ctx.pool, opening, this.ctx.statementTimeoutMs));
      }
      reply = await this.withRetries(() => this.ctx.sync(this.ctx.pool, payload));
    } catch (err) {
      // A definitive answer (a data error, a sequence this lease cannot be at), or shutdown's grace ran out.
      this.ctx.metrics.syncFailed();
      this.poisoned = true;
      this.ctx.retire(this);
      this.ctx.onSyncError(err, this);
      // Never a charge rejected for good: they post straight to the account, and the lease ends.
      if (settling.length > 0) await this.postDirectly(settling);
      // A lease that never opened cannot take requests; one that did is replaced by a new lease.
      for (const w of waiters) {
        if (w.cancelled) continue;
        if (this.accountId === undefined) w.reject(err);
        else this.ctx.retry(w);
      }
      return;
    }
    this.seq = payload.seq;
    this.ctx.metrics.synced((performance.now() - sentAt) / 1000);
    if (touch) this.ctx.beaten(sentAt);
    this.overshot = reply.credits + reply.restored - reply.posted - reply.pending < 0n;
    if (!reply.live || close) {
      this.ended = true;
      this.free = 0n;
      this.ctx.retire(this);
    } else {
      this.free += reply.granted;
    }
    this.ctx.unsynced.count -= settling.length;
    for (const s of settling) s.resolve();
    this.outside = reply.credits + reply.restored - reply.posted - reply.pending;
    this.autoReset = reply.autoReset;
    if (await this.resetFirst(waiters, payload.seq)) {
      // The account changed under its lock: the waiters go first into the next sync, which grants from it.
      this.waiters.unshift(...waiters);
      this.schedule();
      return;
    }
    this.admitWaiters(waiters, reply);
    // Retired while this sync was in flight: what it granted beyond its waiters is not this lease's to keep.
    if (this.retired && !this.ended && this.free > 0n) this.giveBackFree();
  }

  /**
   * The automatic reset (docs/billing.md, "Automatic resets"): before admitting, when the account is under the
   * threshold and a waiter may use a reset, one is used under the account's lock, with an id of this sync's
   * sequence. True when the account changed (a reset was used, or the threshold was no longer reached).
   */
  private async resetFirst(waiters: Waiter[], seq: number): Promise<boolean> {
    const autoReset = this.ctx.autoReset;
    if (!autoReset || !this.autoReset || this.ended || !this.underThreshold()) return false;
    const first = waiters.find((w) => !w.cancelled && w.input.weeklyResets != null);
    if (!first) return false;
    const request = {
      id: autoResetUseId(this.id, seq),
      weeklyBase: first.input.weeklyResets!,
      ownFree: this.free,
      need: first.input.amount,
    };
    let outcome: AutoResetOutcome;
    try {
      outcome = await this.withRetries(() => autoReset(this, request));
    } catch (err) {
      this.ctx.onSyncError(err, this);
      this.resetRetryAt = performance.now() + RESET_RETRY_MS;
      return false;
    }
    if (outcome.outcome === "used" || outcome.outcome === "not_needed") return true;
    if (outcome.outcome === "disabled") this.autoReset = false;
    else this.resetRetryAt = performance.now() + RESET_RETRY_MS;
    return false;
  }

  /**
   * Every statement of a lease is idempotent (the open by the lease's id, a sync by its seq, a direct post by
   * its holds' ids), so a transient fault (a dropped connection, an outage, a timeout) is retried with capped
   * exponential backoff and jitter for as long as the process lives; only a definitive answer, or shutdown's
   * grace running out, ends the attempts.
   */
  private async withRetries<T>(statement: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const slow = setTimeout(() => this.ctx.health.failed(new DatabaseUnavailableError(), "lease sync"), this.ctx.slowMs);
      try {
        const result = await statement();
        this.ctx.health.ok();
        return result;
      } catch (err) {
        if (!isTransientDbError(err) || this.ctx.givingUp()) throw err;
        this.ctx.health.failed(err, "lease sync");
      } finally {
        clearTimeout(slow);
      }
      await this.pause(backoffMs(attempt));
    }
  }

  /**
   * The pause before a retry. A request that starts waiting for this lease meanwhile cuts it short (to
   * WAITING_RETRY_MS after the fault): otherwise, once the database is back, the first reservations would wait
   * out the rest of a pause of up to RETRY_MAX_MS, and be refused 503 at database.request_timeout_ms although
   * the database answers. Not shorter, so that a stream of requests during an outage is not a stream of
   * attempts. Without waiting requests (settlements only) the backoff runs its course.
   */
  private pause(ms: number): Promise<void> {
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
   * Posts settlements straight to the account (and ends this lease, once): for a lease whose sync got a
   * definitive answer, and for its requests resolved afterwards. A journal record the database refuses (a data
   * error) is dropped so that the charge still posts. Rejects only when shutdown's grace ran out.
   */
  async postDirectly(settling: Settling[]): Promise<void> {
    const resolutions = settling.map((s) => s.resolution);
    const post = (withRecords: boolean) =>
      this.withRetries(() => this.ctx.directPost(this.ctx.pool, this.id, this.ctx.instanceId, resolutions, withRecords));
    try {
      try {
        await post(true);
      } catch (err) {
        if (!isDataError(err)) throw err;
        this.ctx.onSyncError(err, this);
        await post(false);
      }
    } catch (err) {
      this.ctx.unsynced.count -= settling.length;
      for (const s of settling) s.reject(err);
      return;
    }
    this.ctx.unsynced.count -= settling.length;
    for (const s of settling) s.resolve();
  }

  /** A request of this (poisoned) lease resolved: its charge posts straight to the account. */
  resolveDirectly(resolution: Resolution): Promise<void> {
    return new Promise((resolve, reject) => {
      this.ctx.unsynced.count++;
      void this.postDirectly([{ resolution, resolve, reject }]);
    });
  }

  /** In arrival order; after the first refusal the later ones are refused too (a refused caller is not overtaken). */
  private admitWaiters(waiters: Waiter[], reply: SyncReply) {
    let refused = false;
    for (const w of waiters) {
      // Its caller has its answer (the deadline's 503); the units stay free for the next one.
      if (w.cancelled) continue;
      if (this.ended) {
        this.ctx.retry(w);
        continue;
      }
      if (!refused && !this.overshot && this.free >= w.input.amount) {
        w.resolve(this.ctx.admit(this, w));
        continue;
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
    const settling = this.settling.splice(0);
    if (settling.length > 0) await this.postDirectly(settling);
  }
}

const max = (a: bigint, b: bigint) => (a > b ? a : b);
