import type pg from "pg";
import type { Config } from "../config/schema.js";
import type { Pool } from "../db/pool.js";
import type { QuotaLedger } from "../quota/types.js";
import type { Clock } from "../time/clock.js";
import type { BackgroundCompletion } from "./completion.js";
import type { PolicyValues } from "./rules.js";

/** What the operations of token transfers share (createTransfers, transfers.ts, builds it once). */
export interface TransfersContext {
  pool: Pool;
  clock: Clock;
  ledger: QuotaLedger;
  /** The config's `transfers`: the policy before the first save, and the lookups' rate. */
  defaults: Config["transfers"];
  /** A plan's daily allowance: the base of a day's account (0 for a plan the config no longer has). */
  baseOf(plan: string): bigint;
  /** The stored policy, or the config's before the first save. */
  policyValues(client: Pool | pg.PoolClient): Promise<PolicyValues>;
  /** The sending process's own completions. */
  completion: BackgroundCompletion;
}
