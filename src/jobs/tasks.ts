import type { Task, TaskList } from "graphile-worker";
import type { SessionService } from "../auth/types.js";

export interface JobDeps {
  sessions: SessionService;
}

/** Payload type of every task, declared once per task name. */
export interface TaskPayloads {
  prune_sessions: Record<string, unknown>;
}

// Delivery is at least once: every task must be safe to run twice.
function pruneSessions(deps: JobDeps): Task {
  return async (_payload, helpers) => {
    const removed = await deps.sessions.pruneExpired(new Date());
    if (removed > 0) helpers.logger.info(`pruned ${removed} expired or revoked sessions`);
  };
}

export function taskList(deps: JobDeps): TaskList & Record<keyof TaskPayloads, Task> {
  return { prune_sessions: pruneSessions(deps) };
}

// jobKey keeps one pending run per task even when several gateway processes share the schedule.
export const crontab = ["*/15 * * * * prune_sessions ?jobKey=prune_sessions&max=3"].join("\n");
