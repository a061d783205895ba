import type { ReserveInput, ReserveResult } from "./types.js";

/** A reservation that did not fit the lease's free units: it waits for a sync of the lease. */
export interface Waiter {
  input: ReserveInput;
  now: Date;
  resolve: (result: ReserveResult) => void;
  reject: (err: unknown) => void;
  /** The caller stopped waiting (its deadline passed): skipped when a grant comes, never admitted. */
  cancelled: boolean;
  /** The other processes were asked to give back for it once (give-back.ts): a refusal now is final. */
  askedOthers?: boolean;
  /** performance.now() at which its caller stops waiting (the 503 of database.request_timeout_ms). */
  deadlineAt: number;
}
