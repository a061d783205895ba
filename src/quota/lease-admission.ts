import type { SyncReply } from "./lease-sql.js";
import { LeaseSettlement } from "./lease-settlement.js";
import type { AccountFigures } from "./lease-state.js";
import type { Waiter } from "./lease-waiter.js";
import type { Refusal } from "./types.js";

// Admission against the lease (docs/billing.md, "Escrow"): a reservation that fits the free units is taken from
// them, with no statement; one that does not waits for a sync, whose grant admits the waiters in arrival order.

const DEMAND_WINDOW_MS = 1000;

/**
 * The lease's sizing, in seconds of its demand (docs/billing.md, "Escrow"): a top-up asks for HEADROOM_SECONDS of it,
 * and is asked for once the free units cover less than LEAD_SECONDS. Measured with 64 processes on one account
 * (docs/performance.md, "Hot-account fleet"): a grant waits for the account row, whose queue reached 1-2 s on a busy
 * host, so the lead covers that; and a top-up every 2-4 s per process keeps the row's grants well under what it
 * takes.
 */
export const HEADROOM_SECONDS = 4n;
const LEAD_SECONDS = 2n;

/**
 * After a request was refused though every process holding a lease on its account had been asked to give back (by
 * this process or, told through give-back.ts, another), how long the account counts as spent (between one and two
 * of these, drawn): a request that a sync cannot cover is then refused without asking again, one at least as large
 * as the one refused is refused with no statement at all, and no lease on the account asks for headroom. What the
 * others hold meanwhile is what their own requests in flight free as they settle. Measured with 64 processes on an
 * account spent under load (docs/performance.md, "Hot-account fleet"): asking for every such request, they met
 * their deadline (503) instead of their 429.
 */
const SPENT_MS = 1000;

export abstract class LeaseAdmission extends LeaseSettlement {
  /**
   * Takes `amount` from `free` if nothing waits before it; otherwise queues the call for a sync. A request that
   * may use a reset (`resettable`) goes to the database once the account is under the threshold.
   */
  tryTake(amount: bigint, nowMs: number, resettable: boolean): boolean {
    this.noteDemand(amount, nowMs);
    if (this.waiters.length > 0 || this.overshot || this.failing || this.free < amount || this.accountId === undefined || !this.ctx.fresh())
      return false;
    if (resettable && this.autoReset.on && this.autoReset.underThreshold(this.free)) return false;
    this.free -= amount;
    this.outstanding += amount;
    // Top up before the free units run out, so that requests rarely wait for the database.
    if (this.free < this.demand() * LEAD_SECONDS) {
      this.wantTopUp = true;
      this.loop.schedule();
    }
    return true;
  }

  wait(waiter: Waiter): void {
    this.waiters.push(waiter);
    this.loop.hurry();
    this.loop.schedule();
  }

  /** Units reserved over about the last second: how much a top-up asks for. */
  protected demand(): bigint {
    return this.windowSum > this.lastWindowSum ? this.windowSum : this.lastWindowSum;
  }

  /**
   * In arrival order; after the first refusal the later ones are refused too (a refused caller is not overtaken).
   * A waiter whose day ended while it waited is admitted on the new day's account, never on the old one.
   */
  protected admitWaiters(waiters: Waiter[], reply: SyncReply) {
    let refused = false;
    let toldSpent = false;
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
      // anyone is refused (give-back.ts). Once per waiter, and not while the account counts as spent.
      if (!refused && !w.askedOthers && !this.overshot && !this.retired && reply.others > 0 && !this.spent()) {
        const rest = waiters.slice(i).filter((x) => !x.cancelled);
        for (const x of rest) x.askedOthers = true;
        const shortfall = rest.reduce((sum, x) => sum + x.input.amount, 0n) - this.free;
        // Half of what is left to the first of them: the other half is for the sync after the answers.
        void this.ctx.askOthers(this, reply.others, shortfall, (w.deadlineAt - performance.now()) / 2).then(() => {
          this.waiters.unshift(...rest);
          this.loop.schedule();
        });
        return;
      }
      // Refused after every one was asked: the others hear it, and what this sync granted short of the request is
      // given back, for their syncs to gather.
      if (!refused && w.askedOthers && reply.others > 0 && !this.retired && !this.spent()) {
        this.markSpent(w.input.amount);
        this.ctx.tellSpent(this, w.input.amount);
        toldSpent = true;
      }
      refused = true;
      w.resolve(this.refusal(reply, w.now));
    }
    if (toldSpent && this.free > 0n) this.giveBackFree();
  }

  /**
   * While the account counts as spent, a request at least as large as the one refused, which neither this lease's
   * free units nor the account (as its last sync read it) can cover, is refused here, with no statement: a process
   * short of units would otherwise send a sync for each such request, and with many processes those queue on the
   * account row. A smaller one goes to the database, which may have gathered what others gave back since. So does a
   * user's with automatic resets, which may use one.
   */
  refuseAtOnce(amount: bigint, now: Date): Refusal | undefined {
    const figures = this.figures;
    if (!this.spent() || amount < this.spentAmount || !figures || this.free >= amount || this.autoReset.on || this.retired || this.failing)
      return undefined;
    if (figures.credits + figures.restored - figures.posted - figures.pending >= amount) return undefined;
    return this.refusal(figures, now);
  }

  private refusal(figures: AccountFigures, now: Date): Refusal {
    return {
      ok: false,
      allowance: figures.credits + figures.restored,
      used: figures.posted,
      reserved: figures.pending - this.free,
      resetsAt: this.ctx.resetsAt(now),
    };
  }

  /**
   * A request of `amount` units on the account was refused after every process was asked (SPENT_MS). The window is
   * drawn between one and two SPENT_MS, so that the processes told at once do not all ask again at once when it ends.
   */
  markSpent(amount: bigint): void {
    this.spentUntil = performance.now() + SPENT_MS * (1 + Math.random());
    this.spentAmount = amount;
  }

  protected spent(): boolean {
    return performance.now() < this.spentUntil;
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
}
