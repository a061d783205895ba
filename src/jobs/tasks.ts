import type { Task, TaskList } from "graphile-worker";
import type { SessionService } from "../auth/types.js";
import type { QuotaLedger } from "../quota/index.js";

export interface JobDeps {
  sessions: SessionService;
  ledger: QuotaLedger;
}

/** Payload type of every task, declared once per task name. */
export interface TaskPayloads {
  prune_sessions: Record<string, unknown>;
  expire_holds: Record<string, unknown>;
}

// Delivery is at least once: every task must be safe to run twice.
function pruneSessions(deps: JobDeps): Task {
  return async (_payload, helpers) => {
    const now = new Date();
    const removed = await deps.sessions.pruneExpired(now);
    if (removed > 0) helpers.logger.info(`pruned ${removed} expired or revoked sessions`);
    const windows = await deps.sessions.pruneLoginAttempts(now);
    if (windows > 0) helpers.logger.info(`pruned ${windows} ended login-attempt windows`);
  };
}

// Returns the pending units of dead processes' leases and of durable holds past their expiry. Every serving
// process also runs this on its own timer (src/runtime/expiry-sweep.ts), so it never depends on the worker.
function expireHolds(deps: JobDeps): Task {
  return async (_payload, helpers) => {
    const { leases, durable } = await deps.ledger.expire();
    if (leases + durable > 0) helpers.logger.info(`expired ${leases} abandoned leases and ${durable} durable holds`);
  };
}

export function taskList(deps: JobDeps): TaskList & Record<keyof TaskPayloads, Task> {
  return { prune_sessions: pruneSessions(deps), expire_holds: expireHolds(deps) };
}

// jobKey keeps one pending run per task even when several gateway processes share the schedule.
export const crontab = [
  "*/15 * * * * prune_sessions ?jobKey=prune_sessions&max=3",
  "* * * * * expire_holds ?jobKey=expire_holds&max=3",
].join("\n");
