import type { Clock } from "./report.js";
import { runTask, type AnyTaskDefinition, type Job, type TaskHelpers, type TaskResult } from "./task.js";

// A task against its two clocks: the lease's deadline and the worker's shutdown deadline. Whichever ends first decides;
// a task still running is abandoned (its signal is aborted), and its late answer is never used.

export type TaskEnding =
  { kind: "result"; result: TaskResult } | { kind: "error"; error: unknown } | { kind: "deadline" } | { kind: "shutdown" };

export function raceTask(
  task: AnyTaskDefinition,
  job: Job,
  helpers: Omit<TaskHelpers, "signal">,
  shutdown: AbortSignal,
  clock: Clock,
): Promise<TaskEnding> {
  const taskSignal = new AbortController();
  const timer = new AbortController();
  return new Promise((resolve) => {
    let settled = false;
    const finish = (ending: TaskEnding) => {
      if (settled) return;
      settled = true;
      timer.abort();
      shutdown.removeEventListener("abort", onShutdown);
      if (ending.kind === "deadline" || ending.kind === "shutdown") taskSignal.abort(new Error(`job abandoned: ${ending.kind}`));
      resolve(ending);
    };
    const onShutdown = () => finish({ kind: "shutdown" });
    if (shutdown.aborted) return onShutdown();
    shutdown.addEventListener("abort", onShutdown, { once: true });
    void clock.sleep(Math.max(0, helpers.deadline.getTime() - clock.now()), timer.signal).then(() => {
      if (!timer.signal.aborted) finish({ kind: "deadline" });
    });
    Promise.resolve()
      .then(() => runTask(task, job, { ...helpers, signal: taskSignal.signal }))
      .then(
        (result) => finish({ kind: "result", result }),
        (error: unknown) => finish({ kind: "error", error }),
      );
  });
}
