import os from "node:os";
import { describeError, isRetryable } from "../client/errors.js";
import type { ClaimedJob } from "../../src/support/wire.js";
import { backoffDelay, pollDelay } from "./backoff.js";
import { runJob } from "./job.js";
import { leaseTimes } from "./lease-deadline.js";
import { claimLimit, resolveOptions, type RunnerOptions } from "./options.js";

// The claim loop: as many jobs in flight as `concurrency` allows, each run by ./job.ts within its lease; idle waits
// and backoffs are cut short by stop(). Stopping ends claiming at once, gives in-flight jobs the shutdown deadline,
// then abandons the rest (failed retryable, so another worker takes them after the gateway's backoff).

export type { RunnerOptions } from "./options.js";
export { RUNNER_ERROR_CODES, type JobOutcome } from "./job.js";

export interface Runner {
  /** Begins the claim loop. */
  start(): void;
  /** Stops claiming; finishes or fails in-flight jobs within shutdownDeadlineMs; resolves when all have settled. */
  stop(): Promise<void>;
  /** Settles when the runner has stopped: rejected with the error when a claim was refused for good (a 401, a 400). */
  readonly done: Promise<void>;
}

export function createRunner(options: RunnerOptions): Runner {
  const o = resolveOptions(options);
  const clock = { now: o.now, sleep: o.sleep, random: o.random };
  const tasks = new Map(o.tasks.map((task) => [task.kind, task]));
  const stopping = new AbortController();
  const shutdown = new AbortController();
  const inFlight = new Set<Promise<void>>();
  let wake: (() => void) | null = null;
  let loop: Promise<void> = Promise.resolve();
  let fatal: unknown = null;
  let stopped: Promise<void> | null = null;
  let settleDone!: () => void;
  let failDone!: (err: unknown) => void;
  const done = new Promise<void>((resolve, reject) => {
    settleDone = resolve;
    failDone = reject;
  });
  // Whoever started the runner may not await `done`; a refused claim is also logged, so it is never lost.
  done.catch(() => {});

  const notify = () => {
    const waiting = wake;
    wake = null;
    waiting?.();
  };

  const begin = (job: ClaimedJob, claimSentAt: number) => {
    const lease = leaseTimes({
      leaseExpiresAt: job.lease_expires_at,
      claimSentAt,
      leaseSeconds: o.leaseSeconds,
      safetyMarginMs: o.safetyMarginMs,
    });
    const task = tasks.get(job.kind);
    const running: Promise<void> = runJob({ client: o.client, task, job, lease, shutdown: shutdown.signal, logger: o.logger, clock })
      .catch((err: unknown) => o.logger.error({ job_id: job.id, err: describeError(err) }, "job runner failed"))
      .finally(() => {
        inFlight.delete(running);
        notify();
      });
    inFlight.add(running);
  };

  const claimLoop = async () => {
    for (let failures = 0; !stopping.signal.aborted;) {
      const free = o.concurrency - inFlight.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      const claimSentAt = o.now();
      let jobs: ClaimedJob[];
      try {
        jobs = await o.client.claim({ limit: claimLimit(free), lease_seconds: o.leaseSeconds, worker_id: o.workerId });
        failures = 0;
      } catch (err) {
        if (!isRetryable(err)) throw err;
        failures++;
        const delay = backoffDelay(failures, err.retryAfterMs, o.random);
        o.logger.warn({ err: describeError(err), failures, delay_ms: delay }, "claim failed; backing off");
        await o.sleep(delay, stopping.signal);
        continue;
      }
      for (const job of jobs) begin(job, claimSentAt);
      if (jobs.length === 0) await o.sleep(pollDelay(o.pollIntervalMs, o.random), stopping.signal);
    }
  };

  const stop = () => {
    stopped ??= (async () => {
      stopping.abort();
      notify();
      const timer = new AbortController();
      void o.sleep(o.shutdownDeadlineMs, timer.signal).then(() => {
        if (!timer.signal.aborted) shutdown.abort();
      });
      await loop;
      await Promise.all([...inFlight]);
      timer.abort();
      if (fatal === null) settleDone();
      else failDone(fatal);
    })();
    return stopped;
  };

  let started = false;
  return {
    start() {
      if (started || stopping.signal.aborted) return;
      started = true;
      loop = claimLoop().catch((err: unknown) => {
        fatal = err;
        o.logger.error({ err: describeError(err) }, "claim refused; the runner stops");
      });
      void loop.then(stop);
    },
    stop,
    done,
  };
}

/** Anything that delivers signals as `process` does (a fake one in tests). */
export interface SignalSource {
  on(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  removeListener(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  exit(code: number): void;
}

/**
 * Calls runner.stop() on the first of `signals`; a second signal exits at once (status 128 + the signal's number),
 * for an operator who will not wait for the shutdown deadline. Resolves (or rejects) as `runner.done` does.
 */
export function stopOnSignals(
  runner: Runner,
  signals: NodeJS.Signals[] = ["SIGTERM", "SIGINT"],
  source: SignalSource = process,
): Promise<void> {
  let received = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (received) return source.exit(128 + (os.constants.signals[signal] ?? 0));
    received = true;
    void runner.stop();
  };
  for (const signal of signals) source.on(signal, onSignal);
  return runner.done.finally(() => {
    for (const signal of signals) source.removeListener(signal, onSignal);
  });
}
