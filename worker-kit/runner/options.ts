import pino, { type Logger } from "pino";
import { CLAIM_LIMIT, LEASE_SECONDS } from "../wire/support.js";
import type { WorkerClient } from "../client/worker-client.js";
import type { AnyTaskDefinition } from "./task.js";

// The runner's options, their defaults, and the checks that turn a wrong setting into one clear error at start-up
// rather than a 400 from every claim.

export interface RunnerOptions {
  client: WorkerClient;
  /** One per kind at most. A claimed job of a kind without a task is failed at once, not retryable (`no_task_for_kind`). */
  tasks: AnyTaskDefinition[];
  /** Sent as `worker_id` on claim (1..200 characters). */
  workerId: string;
  /** Jobs in flight at most, default 2; a claim asks for min(free slots, 5). */
  concurrency?: number;
  /** 30..300, default 120. */
  leaseSeconds?: number;
  /** The runner stops waiting for a task this long before its lease expires, default 10_000. */
  safetyMarginMs?: number;
  /** Idle wait between empty claims, default 2_000 (±25 %). */
  pollIntervalMs?: number;
  /** On stop(): in-flight tasks get this long, then are aborted and failed retryable; default 20_000. */
  shutdownDeadlineMs?: number;
  /** Default: a pino logger to stderr. */
  logger?: Logger;
  now?: () => number;
  /** Resolves after `ms`, or early when `signal` aborts; it must never reject. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
}

export type ResolvedOptions = Required<RunnerOptions>;

/** The defaults of the runner's settings, for a command line that shows them in its help. */
export const RUNNER_DEFAULTS = {
  concurrency: 2,
  leaseSeconds: 120,
  safetyMarginMs: 10_000,
  pollIntervalMs: 2_000,
  shutdownDeadlineMs: 20_000,
} as const satisfies Partial<RunnerOptions>;

export function resolveOptions(options: RunnerOptions): ResolvedOptions {
  const resolved: ResolvedOptions = {
    ...RUNNER_DEFAULTS,
    now: Date.now,
    sleep: abortableSleep,
    random: Math.random,
    ...definedOnly(options),
    logger: options.logger ?? pino({ base: { service: "worker" } }, pino.destination({ fd: 2, sync: true })),
  };
  check(resolved.workerId.length >= 1 && resolved.workerId.length <= 200, "workerId must be 1 to 200 characters");
  check(Number.isInteger(resolved.concurrency) && resolved.concurrency >= 1, "concurrency must be a positive integer");
  check(
    Number.isInteger(resolved.leaseSeconds) && resolved.leaseSeconds >= LEASE_SECONDS.min && resolved.leaseSeconds <= LEASE_SECONDS.max,
    `leaseSeconds must be an integer from ${LEASE_SECONDS.min} to ${LEASE_SECONDS.max}`,
  );
  check(
    resolved.safetyMarginMs >= 0 && resolved.safetyMarginMs < resolved.leaseSeconds * 1000,
    "safetyMarginMs must be at least 0 and less than the lease",
  );
  check(resolved.pollIntervalMs >= 0 && resolved.shutdownDeadlineMs >= 0, "pollIntervalMs and shutdownDeadlineMs must be at least 0");
  check(resolved.tasks.length > 0, "at least one task is needed");
  const kinds = resolved.tasks.map((t) => t.kind);
  const twice = kinds.find((kind, i) => kinds.indexOf(kind) !== i);
  check(twice === undefined, `two tasks for kind ${twice}`);
  return resolved;
}

/** The most jobs one claim may ask for, given the free slots. */
export const claimLimit = (freeSlots: number) => Math.min(freeSlots, CLAIM_LIMIT.max);

function check(ok: boolean, message: string): void {
  if (!ok) throw new RangeError(`worker runner: ${message}`);
}

function definedOnly(options: RunnerOptions): RunnerOptions {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as unknown as RunnerOptions;
}

export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
