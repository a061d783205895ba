import { certainlyNotCommitted, DatabaseUnavailableError, isTransientDbError } from "../db/faults.js";
import { backoffMs } from "../db/backoff.js";
import { HEADROOM_SECONDS, LeaseAdmission } from "./lease-admission.js";
import { openLease } from "./lease-open-sql.js";
import type { SyncLease, SyncReply } from "./lease-sql.js";
import type { Attempt } from "./lease-state.js";
import { SYNC_RETRY } from "./lease-sync-loop.js";
import type { AutoResetOutcome } from "./resets-sql.js";

// The sync of a lease with the database (lease-sql.ts): everything queued goes into one attempt, whose reply grants
// units and admits the waiters. A sync that fails is retried for as long as the process lives: one the database
// refused (it certainly did not commit) is built again with whatever came since; one whose outcome is unknown (a cut
// connection, a timeout) is sent again exactly as it was, since it may have committed (it is applied once, by its
// sequence number).

export abstract class LeaseSyncAttempts extends LeaseAdmission {
  protected async syncOnce(): Promise<void> {
    if (this.poisoned) return this.postQueued();
    if (this.refunds.length > 0 && !(await this.refundWithdrawn())) return;
    // An attempt sent again takes nothing queued since it was built, and the schedule() of what was queued meanwhile
    // was spent on this turn of the loop: without another turn, it would wait for the lease's next request.
    if (this.attempt) this.loop.again = true;
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
    // A top-up asks for HEADROOM_SECONDS of this lease's demand; never in a sync that gives units back unasked.
    const topUp = need > 0n || (this.wantTopUp && this.giveBack === 0n);
    this.wantTopUp = false;
    const now = performance.now();
    const yielding = now < this.yieldUntil || now < this.spentUntil;
    const headroom = this.retired || this.ended || !topUp || yielding ? 0n : max(demand * HEADROOM_SECONDS, 4n * need);
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
    const reset = this.autoReset.take(this.id, this.seq + 1, this.free);
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
      // A sync that admits or refuses waiters (0-unit ones too) is a full one: a refusal reads its exact figures. A
      // give-back another process asked for is not: its units wait on the lease row for a full sync on the account
      // to gather them.
      postOnly:
        waiters.length === 0 &&
        need === 0n &&
        headroom === 0n &&
        this.giveBack === this.askedGiveBack &&
        !close &&
        !touch &&
        !reset &&
        this.appliedBase?.base === this.base &&
        this.appliedBase.revision === baseRevision,
    };
    this.giveBack = 0n;
    this.askedGiveBack = 0n;
    return { payload, batch, waiters, reset, pinned: false, afterSync: this.afterSync.splice(0) };
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
      await this.pause(backoffMs(++this.failures, SYNC_RETRY));
      this.loop.again = true;
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

  /** An attempt that certainly did not commit: its parts go back, to be sent with whatever came since. */
  private requeue(attempt: Attempt): void {
    this.attempt = undefined;
    this.settling.unshift(...attempt.batch);
    this.giveBack += attempt.payload.giveBack;
    if (attempt.payload.postOnly) this.askedGiveBack += attempt.payload.giveBack;
    this.waiters.unshift(...attempt.waiters.filter((w) => !w.cancelled));
    this.afterSync.unshift(...attempt.afterSync);
    if (attempt.reset) this.autoReset.requeue(attempt.reset);
    for (const entry of attempt.batch) if (entry.withdrawal) this.applyWithdrawal(entry);
  }

  private applied(attempt: Attempt, reply: SyncReply, outcome: AutoResetOutcome | undefined, sentAt: number, firstSentAt: number): void {
    const { payload, batch, waiters } = attempt;
    this.seq = payload.seq;
    if (!payload.postOnly) this.appliedBase = { base: payload.base, revision: payload.baseRevision };
    this.ctx.metrics.synced((performance.now() - sentAt) / 1000);
    if (payload.touch && !reply.fenced) this.ctx.beaten(firstSentAt);
    this.overshot = reply.credits + reply.restored - reply.posted - reply.pending < 0n;
    this.figures = reply;
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
    if (this.refunds.length > 0) this.loop.schedule();
    for (const done of attempt.afterSync) done(true);
    if (reply.fenced) this.ctx.fenced(this);
    this.autoReset.synced(reply);
    if (outcome) this.autoReset.after(outcome);
    else if (this.ctx.syncWithReset && !this.ended && !this.retired && this.autoReset.holdsBack(waiters, this.free)) {
      // The next sync uses a reset first, in its own transaction, and grants these waiters from the restored day.
      this.waiters.unshift(...waiters);
      this.loop.schedule();
      return;
    }
    this.admitWaiters(waiters, reply);
    // Retired while this sync was in flight: what it granted beyond its waiters is not this lease's to keep. Nor
    // are free units on an overdrawn account, where they admit nothing: given back, they cover the overdraft as far
    // as they go, and, when it was only units leased and unused (every unit leased out and an overrun posted
    // beside them), the account is covered again for whoever needs it.
    if ((this.retired || this.overshot) && !this.ended && this.free > 0n) this.giveBackFree();
  }
}

const max = (a: bigint, b: bigint) => (a > b ? a : b);
