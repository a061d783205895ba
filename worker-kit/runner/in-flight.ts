import { describeError } from "../client/errors.js";
import type { ClaimedJob } from "../wire/support.js";
import { runJob } from "./job.js";
import { leaseTimes } from "./lease-deadline.js";
import type { ResolvedOptions } from "./options.js";
import type { Clock } from "./report.js";
import type { AnyTaskDefinition } from "./task.js";

/** The jobs a runner is running, each by ./job.ts within its lease; the claim loop waits here for a free slot. */
export class InFlightJobs {
  private readonly running = new Set<Promise<void>>();
  private readonly tasks: Map<string, AnyTaskDefinition>;
  private readonly clock: Clock;
  private wake: (() => void) | null = null;

  /** `shutdown` aborts the tasks still running (the shutdown deadline passed, or they are given back). */
  constructor(
    private readonly o: ResolvedOptions,
    private readonly shutdown: AbortSignal,
    private readonly givingBack: AbortSignal,
  ) {
    this.clock = { now: o.now, sleep: o.sleep, random: o.random };
    this.tasks = new Map(o.tasks.map((task) => [task.kind, task]));
  }

  get size(): number {
    return this.running.size;
  }

  begin(job: ClaimedJob, claimSentAt: number): void {
    const { o } = this;
    const lease = leaseTimes({
      leaseExpiresAt: job.lease_expires_at,
      claimSentAt,
      leaseSeconds: o.leaseSeconds,
      safetyMarginMs: o.safetyMarginMs,
    });
    const task = this.tasks.get(job.kind);
    const running: Promise<void> = runJob({
      client: o.client,
      task,
      job,
      lease,
      shutdown: this.shutdown,
      givingBack: this.givingBack,
      logger: o.logger,
      clock: this.clock,
    })
      .catch((err: unknown) => o.logger.error({ job_id: job.id, err: describeError(err) }, "job runner failed"))
      .finally(() => {
        this.running.delete(running);
        this.notify();
      });
    this.running.add(running);
  }

  /** Resolves when a job settles, or at notify(). */
  changed(): Promise<void> {
    return new Promise<void>((resolve) => (this.wake = resolve));
  }

  notify(): void {
    const waiting = this.wake;
    this.wake = null;
    waiting?.();
  }

  /** Settles when every job running now has. */
  settled(): Promise<void[]> {
    return Promise.all([...this.running]);
  }
}
