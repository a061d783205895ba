// worker-kit's public entry: the typed clients of the gateway's worker and staff endpoints, their errors, the task
// contract and the runner (docs/worker-kit.md).

export { describeError, GatewayConnectionError, GatewayHttpError, isRetryable, type GatewayCallError } from "./client/errors.js";
export type { HttpOptions } from "./client/http.js";
export { createWorkerClient, DEFAULT_GATEWAY_URL, type WorkerClient, type WorkerClientOptions } from "./client/worker-client.js";
export { login, type CaseChange, type DraftKind, type LoginOptions, type StaffClient } from "./client/staff-client.js";
export {
  defineTask,
  PermanentTaskError,
  type Disposition,
  type Job,
  type JobKind,
  type AnyTaskDefinition,
  type TaskDefinition,
  type TaskFn,
  type TaskHelpers,
  type TaskResult,
  type UsageReport,
} from "./runner/task.js";
export {
  createRunner,
  RUNNER_DEFAULTS,
  RUNNER_ERROR_CODES,
  stopOnSignals,
  type JobOutcome,
  type Runner,
  type RunnerOptions,
  type SignalSource,
  type StopOptions,
} from "./runner/runner.js";
export { MANUAL_LEASE_SECONDS, manualCompleteRequest, manualFailRequest, parseCardJson } from "./tui/state/manual-job.js";
