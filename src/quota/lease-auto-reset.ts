import { AUTO_RESET_THRESHOLD, autoResetUseId } from "./auto-reset.js";
import type { SyncReply } from "./lease-sql.js";
import type { Waiter } from "./lease-waiter.js";
import type { AutoResetOutcome } from "./resets-sql.js";

/** What a lease asks of an automatic reset: checked again, and decided, under the account's lock. */
export interface AutoResetRequest {
  /** The use's id: one per lease and sync sequence, so a retried attempt is the same use. */
  id: string;
  weeklyBase: bigint;
  ownFree: bigint;
  need: bigint;
}

/**
 * After an automatic reset could not be used (none left, the request would not fit, nothing spent), requests
 * under the threshold are admitted as usual for this long before the next attempt: an exhausted user with
 * automatic resets on costs one extra statement a second, not one per request. A grant is noticed within it.
 */
const RESET_RETRY_MS = 1000;

/**
 * The automatic reset as one lease sees it (docs/billing.md, "Automatic resets"): when the account is under the
 * threshold and a waiter may use a reset, the waiters are held back and the next sync uses one first, in the same
 * transaction as the grant that admits them.
 */
export class LeaseAutoReset {
  /** From the last sync: the user has automatic resets on, and the account's remaining outside this lease's free units. */
  on = false;
  private outside = 0n;
  /** performance.now() before which no automatic reset is tried (RESET_RETRY_MS). */
  private retryAt = 0;
  /** The next sync uses an automatic reset first, for a request of this size (its waiters were held back for it). */
  private wanted: { weeklyBase: bigint; need: bigint } | undefined;

  /** The account's remaining, the lease's `free` units included, is under the threshold, and a reset may be tried. */
  underThreshold(free: bigint): boolean {
    return this.outside + free < AUTO_RESET_THRESHOLD && performance.now() >= this.retryAt;
  }

  /** What a sync read of the account. */
  synced(reply: SyncReply): void {
    this.outside = reply.credits + reply.restored - reply.posted - reply.pending;
    this.on = reply.autoReset;
  }

  /**
   * Whether the waiters are held back for a sync that uses a reset first: the account is under the threshold and
   * one of them may use a reset (it sets the size of the request the reset must let in).
   */
  holdsBack(waiters: readonly Waiter[], free: bigint): boolean {
    if (!this.on || !this.underThreshold(free)) return false;
    const first = waiters.find((w) => !w.cancelled && w.input.weeklyResets != null);
    if (!first) return false;
    this.wanted = { weeklyBase: first.input.weeklyResets!, need: first.input.amount };
    return true;
  }

  /** What the next sync (of lease `leaseId`, at `seq`) asks of a reset, if a reset is wanted: taken by that sync. */
  take(leaseId: string, seq: number, ownFree: bigint): AutoResetRequest | undefined {
    const wanted = this.wanted;
    this.wanted = undefined;
    return wanted && { id: autoResetUseId(leaseId, seq), weeklyBase: wanted.weeklyBase, ownFree, need: wanted.need };
  }

  /** A sync carrying `reset` certainly did not commit: the next one asks again. */
  requeue(reset: AutoResetRequest): void {
    this.wanted = { weeklyBase: reset.weeklyBase, need: reset.need };
  }

  after(outcome: AutoResetOutcome): void {
    if (outcome.outcome === "used" || outcome.outcome === "not_needed") return;
    if (outcome.outcome === "disabled") this.on = false;
    else this.retryAt = performance.now() + RESET_RETRY_MS;
  }
}
