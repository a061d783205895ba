import { certainlyNotCommitted, isDataError, isTransientDbError } from "../db/faults.js";
import { backoffMs } from "../db/backoff.js";
import { AccountGoneError } from "./lease-direct-sql.js";
import { LeaseState } from "./lease-state.js";
import { SYNC_RETRY } from "./lease-sync-loop.js";
import type { Settling } from "./settling.js";

// A request's resolution on its way to the ledger through its lease (docs/billing.md, "Settlement"): queued for the
// next sync, withdrawn when its caller stops waiting, refunded when withdrawn after it committed, or, on a lease
// that cannot sync any more, posted straight to the account.

export abstract class LeaseSettlement extends LeaseState {
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
    if (entry.deadlineMs !== null) this.loop.hurry();
    this.loop.schedule(this.ctx.groupMs === 0);
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

  /** A request held longer than allowed: its units are free again (a late settle still posts its charge). */
  expire(amount: bigint): void {
    this.returnUnits(amount);
    if (this.retired) this.giveBackFree();
  }

  /**
   * A request of this (poisoned) lease resolved: its charge posts straight to the account, by the lease's loop
   * (so that flush and close wait for it, and its deadline withdraws it).
   */
  settleDirectly(entry: Settling): void {
    if (!entry.expired) this.outstanding -= entry.resolution.amount;
    this.ctx.unsynced.count++;
    this.settling.push(entry);
    this.loop.schedule();
  }

  /** A withdrawn charge that no statement committed: a void, with the record its caller gave. */
  protected applyWithdrawal(entry: Settling): void {
    const withdrawable = entry.withdrawal;
    entry.withdrawal = undefined;
    if (!withdrawable || entry.resolution.charged === null) return;
    const covered = entry.toVoid(withdrawable);
    if (!this.ended) this.free += covered;
    if (this.retired) this.giveBackFree();
  }

  /** A statement carrying the entry committed: its caller hears so, or, told it was withdrawn, it is refunded. */
  protected committed(entry: Settling): void {
    if (!entry.withdrawal) return entry.answer("committed");
    entry.toVoid(entry.withdrawal);
    entry.withdrawal = undefined;
    this.refunds.push(entry);
  }

  /**
   * Refunds the charges withdrawn after their statement committed. A transient fault is retried (false: the loop
   * comes back after the pause); anything else is logged and the refund dropped (its rows stay as charged).
   */
  protected async refundWithdrawn(): Promise<boolean> {
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
        await this.pause(backoffMs(++this.failures, SYNC_RETRY));
        this.loop.again = true;
        return false;
      }
      this.ctx.onSyncError(err, this);
      return true;
    }
  }

  /** What a poisoned lease still had queued: waiters reserve again, settlements post straight to the account. */
  protected async postQueued(): Promise<void> {
    for (const w of this.waiters.splice(0)) if (!w.cancelled) this.ctx.retry(w);
    if (this.refunds.length > 0 && !(await this.refundWithdrawn())) return;
    const batch = this.settling.splice(0);
    if (batch.length > 0) await this.postDirectly(batch, false);
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
  protected async postDirectly(batch: Settling[], mayHaveCommitted: boolean): Promise<void> {
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
        await this.pause(backoffMs(attempt, SYNC_RETRY));
      }
    }
    this.direct = [];
    this.ctx.unsynced.count -= batch.length;
    for (const entry of batch) this.committed(entry);
    if (this.refunds.length > 0) this.loop.schedule();
  }
}
