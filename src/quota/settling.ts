import type { Resolution } from "./lease-sql.js";
import type { SettleOutcome, Withdrawable } from "./types.js";

// A request's resolution on its way to the ledger (docs/billing.md, "Settlement"): queued on its lease, sent in a
// sync with whatever else is ready, and answered to its caller once the sync committed, or withdrawn (a charge
// whose caller stopped waiting, turned into a void) while no statement carrying it can have committed.

export class Settling {
  /** The part of the charge taken from the lease's free units when it was queued; the rest is an overshoot. */
  covered = 0n;
  /**
   * Its caller stopped waiting (and was answered that nothing was charged) while a statement carrying it was in
   * flight: it becomes a void if that statement certainly failed, and is refunded if it committed (refund-sql.ts).
   */
  withdrawal: Withdrawable | undefined;
  /** When it was queued (performance.now()), for its deadline. */
  readonly queuedAt = performance.now();
  readonly done: Promise<SettleOutcome>;
  private answered = false;
  private resolveDone!: (outcome: SettleOutcome) => void;
  private rejectDone!: (err: unknown) => void;

  constructor(
    public resolution: Resolution,
    /** Its reservation had expired (quota.max_hold_seconds): its units went back then, not now. */
    readonly expired: boolean,
    /** Past this many ms after `queuedAt` without a commit, its caller withdraws it (null: it never does). */
    readonly deadlineMs: number | null,
    readonly withdrawable: Withdrawable | null,
  ) {
    this.done = new Promise<SettleOutcome>((resolve, reject) => {
      this.resolveDone = resolve;
      this.rejectDone = reject;
    });
  }

  /** Whether its caller has its answer (committed, withdrawn or failed). */
  get settled(): boolean {
    return this.answered;
  }

  answer(outcome: SettleOutcome): void {
    if (this.answered) return;
    this.answered = true;
    this.resolveDone(outcome);
  }

  fail(err: unknown): void {
    if (this.answered) return;
    this.answered = true;
    this.rejectDone(err);
  }

  overdue(nowMs: number): boolean {
    return !this.answered && this.deadlineMs !== null && this.withdrawable !== null && nowMs - this.queuedAt >= this.deadlineMs;
  }

  /** Turns the charge into a void with the record its caller gives for that case; returns the units it had covered. */
  toVoid(withdrawable: Withdrawable): bigint {
    const covered = this.covered;
    this.covered = 0n;
    const r = this.resolution;
    this.resolution = {
      holdId: r.holdId,
      requestId: r.requestId,
      amount: r.amount,
      charged: null,
      reservedAt: r.reservedAt,
      record: withdrawable.withdrawnRecord(),
    };
    return covered;
  }
}
