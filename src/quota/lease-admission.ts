import type { SyncReply } from "./lease-sql.js";
import { LeaseSettlement } from "./lease-settlement.js";
import type { Waiter } from "./lease-waiter.js";

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
          this.loop.schedule();
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
