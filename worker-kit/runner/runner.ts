import os from "node:os";
import { describeError } from "../client/errors.js";
import { claimLoop } from "./claim-loop.js";
import { InFlightJobs } from "./in-flight.js";
import { resolveOptions, type RunnerOptions } from "./options.js";

// The runner: its claim loop (./claim-loop.ts) keeps as many jobs in flight as `concurrency` allows, each run by
// ./job.ts within its lease (./in-flight.ts); idle waits and backoffs are cut short by stop(). Stopping ends
// claiming at once, gives in-flight jobs the shutdown deadline, then abandons the rest (failed retryable, so
// another worker takes them after the gateway's backoff); giveBack() abandons them at once.

export { RUNNER_DEFAULTS, type RunnerOptions } from "./options.js";
export { RUNNER_ERROR_CODES, type JobOutcome } from "./job.js";

export interface StopOptions {
  /** Ends the `stopping: …` line (stopOnSignals says how to give the jobs back now). */
  hint?: string;
}

export interface Runner {
  /** Begins the claim loop. */
  start(): void;
  /**
   * Stops claiming; finishes or fails in-flight jobs within shutdownDeadlineMs; resolves when all have settled. With
   * jobs in flight it logs `stopping: waiting up to 20 s for N job(s)` first.
   */
  stop(options?: StopOptions): Promise<void>;
  /**
   * Stops as stop() does, but gives every in-flight job back at once: its task is aborted and the job failed as
   * retryable (`shutdown`), so its lease is released and the gateway queues it again. Resolves when all have settled.
   */
  giveBack(): Promise<void>;
  /** Settles when the runner has stopped: rejected with the error when a claim was refused for good (a 401, a 400). */
  readonly done: Promise<void>;
}

export function createRunner(options: RunnerOptions): Runner {
  const o = resolveOptions(options);
  const stopping = new AbortController();
  const shutdown = new AbortController();
  const givingBack = new AbortController();
  const jobs = new InFlightJobs(o, shutdown.signal, givingBack.signal);
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

  const halt = () => {
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

  const stop = (stopOptions: StopOptions = {}) => {
    if (!stopped && jobs.size > 0) {
      const hint = stopOptions.hint ? `; ${stopOptions.hint}` : "";
      o.logger.info(
        { in_flight: jobs.size, deadline_ms: o.shutdownDeadlineMs },
        `stopping: waiting up to ${duration(o.shutdownDeadlineMs)} for ${jobs.size} job(s)${hint}`,
      );
    }
    return halt();
  };

  const giveBack = () => {
    if (!givingBack.signal.aborted && jobs.size > 0) o.logger.warn({ in_flight: jobs.size }, `giving ${jobs.size} job(s) back now`);
    givingBack.abort();
    const halted = halt();
    shutdown.abort();
    return halted;
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
      void loop.then(halt);
    },
    stop,
    giveBack,
    done,
  };
}

/** `20 s`, `1.5 s`, `300 ms`. */
function duration(ms: number): string {
  if (ms < 1000) return `${ms} ms`;
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}

/** Anything that delivers signals as `process` does (a fake one in tests). */
export interface SignalSource {
  on(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  removeListener(signal: NodeJS.Signals, listener: (signal: NodeJS.Signals) => void): unknown;
  exit(code: number): void;
}

/**
 * The operator's keys for a running worker. The first of `signals` calls runner.stop(), whose line says how long it
 * waits and that the signal again gives the jobs back; the second calls runner.giveBack() and, once every job has
 * been given back, exits with status 128 + the signal's number; a third exits at once. Resolves (or rejects) as
 * `runner.done` does when no second signal came.
 */
export function stopOnSignals(
  runner: Runner,
  signals: NodeJS.Signals[] = ["SIGTERM", "SIGINT"],
  source: SignalSource = process,
): Promise<void> {
  let received = 0;
  let exitCode: number | null = null;
  const onSignal = (signal: NodeJS.Signals) => {
    received++;
    const code = 128 + (os.constants.signals[signal] ?? 0);
    if (received === 1) {
      void runner.stop({ hint: `${signal === "SIGINT" ? "Ctrl-C" : signal} again gives them back now` });
    } else if (received === 2) {
      exitCode = code;
      void runner.giveBack();
    } else {
      source.exit(code);
    }
  };
  for (const signal of signals) source.on(signal, onSignal);
  return runner.done
    .finally(() => {
      for (const signal of signals) source.removeListener(signal, onSignal);
    })
    .then(() => {
      if (exitCode !== null) source.exit(exitCode);
    });
}
