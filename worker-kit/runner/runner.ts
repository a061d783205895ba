import os from "node:os";
import { describeError } from "../client/errors.js";
import { claimLoop } from "./claim-loop.js";
import { InFlightJobs } from "./in-flight.js";
import { resolveOptions, type RunnerOptions } from "./options.js";

// The runner: its claim loop (./claim-loop.ts) keeps as many jobs in flight as `concurrency` allows, each run by
// ./job.ts within its lease (./in-flight.ts); idle waits and backoffs are cut short by stop(). Stopping ends
// claiming at once, gives in-flight jobs the shutdown deadline, then abandons the rest (failed retryable, so
// another worker takes them after the gateway's backoff).

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
  const stopping = new AbortController();
  const shutdown = new AbortController();
  const jobs = new InFlightJobs(o, shutdown.signal);
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

  const stop = () => {
    stopped ??= (async () => {
      stopping.abort();
      jobs.notify();
      const timer = new AbortController();
      void o.sleep(o.shutdownDeadlineMs, timer.signal).then(() => {
        if (!timer.signal.aborted) shutdown.abort();
      });
      await loop;
      await jobs.settled();
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
      loop = claimLoop(o, jobs, stopping.signal).catch((err: unknown) => {
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
