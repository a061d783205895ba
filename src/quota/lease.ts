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
}
