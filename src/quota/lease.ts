import { LeaseSyncAttempts } from "./lease-sync-attempts.js";

/** After giving its units back on another process's request, a lease asks for no headroom for this long. */
const YIELD_MS = 1000;

/**
 * One process's lease on one account (lease-state.ts), and how it ends: restated on a plan change, retired, fenced,
 * or giving its units back to another process.
 */
export class Lease extends LeaseSyncAttempts {
  /** A plan change: give everything free back and let the next sync grant under the new base credits. */
  restate(base: bigint | null, planRevision: number): void {
    this.planRevision = planRevision;
    if (base === this.base) return;
    this.base = base;
    this.spentUntil = 0;
    this.giveBackFree();
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
   * Another process cannot cover requests on this account, short of `wanted` units (undefined: as many as there
   * are): give back what is free up to that, and ask for no headroom for a while so as not to take it straight back.
   * Each process asked giving up to the shortfall, the asking one gets it whenever they hold it between them, and
   * the others keep the rest for their own requests. Resolves with what was given back once that is committed.
   */
  yieldFree(wanted: bigint | undefined): Promise<bigint> {
    this.yieldUntil = performance.now() + YIELD_MS;
    // Asked while the account counts as spent: the asking process tells the outcome, so this one waits for it
    // rather than asking everyone too.
    if (this.spent()) this.markSpent(this.spentAmount);
    const given = wanted === undefined || this.free < wanted ? this.free : wanted;
    if (given <= 0n || this.ended || this.poisoned) return Promise.resolve(0n);
    this.giveBack += given;
    this.askedGiveBack += given;
    this.free -= given;
    this.loop.schedule();
    return new Promise((resolve) => this.afterSync.push((committed) => resolve(committed ? given : 0n)));
  }
}
