import type pg from "pg";
import type { Logger } from "pino";
import type { z } from "zod";
import type { Config } from "../config/schema.js";
import type { DatabaseHealth } from "../db/health.js";
import type { Pool } from "../db/pool.js";
import type { Clock } from "../time/clock.js";
import type { QuotaLedger } from "../quota/types.js";
import { utcDay } from "../time/day.js";
import { completeRows, readPolicyRow, setReceiveDisabled, type TransferRow } from "./transfers-sql.js";
import { backgroundCompletion } from "./completion.js";
import type { TransfersContext } from "./context.js";
import { latest, list } from "./history.js";
import { preview } from "./limits.js";
import { policyFromConfig, readPolicy, savePolicy } from "./policy.js";
import { send, type SendInput } from "./send.js";
import type { adminTransfersAnswer, PolicyBody, previewAnswer, PublicPolicy, TransferRecord, transfersAnswer } from "./wire.js";

export type { SendInput } from "./send.js";

// Daily token transfers (docs/billing.md, "Token transfers"): the rules around transfers-sql.ts, one module per
// operation (send.ts, limits.ts for the preview, history.ts, policy.ts). The sender is always the session's user;
// the recipient is named by email or user ID, and an unknown one reads exactly like one who does not accept
// transfers (recipients.ts).

export interface Transfers {
  /** `pending`: answered 202; otherwise the transfer ended (200). */
  send(sender: { userId: string; plan: string }, input: SendInput): Promise<{ pending: boolean; transfer: TransferRecord }>;
  preview(sender: { userId: string; plan: string }, input: { recipient: string; amount: number }): Promise<z.infer<typeof previewAnswer>>;
  setReceiveDisabled(userId: string, disabled: boolean): Promise<boolean>;
  list(user: { userId: string; plan: string }, cursor: string | undefined, limit: number): Promise<z.infer<typeof transfersAnswer>>;
  policy(): Promise<PublicPolicy>;
  savePolicy(body: PolicyBody, updatedBy: string): Promise<PublicPolicy>;
  latest(userId: string | null): Promise<z.infer<typeof adminTransfersAnswer>>;
  /**
   * Ends a pending transfer once (the sending process's own completion, and graphile-worker's complete_transfer);
   * undefined for an unknown id.
   */
  complete(id: string): Promise<TransferRow | undefined>;
  /** Waits for the completions this process has under way, retrying none after (shutdown). */
  close(): Promise<void>;
}

export function createTransfers(deps: {
  pool: Pool;
  config: Config;
  clock: Clock;
  ledger: QuotaLedger;
  logger: Logger;
  health: DatabaseHealth;
}): Transfers {
  const { pool, config, clock, ledger } = deps;
  const defaults = config.transfers;
  const baseOf = (plan: string) => BigInt(Object.hasOwn(config.plans, plan) ? config.plans[plan]!.daily_tokens : 0);
  const complete = (id: string) => completeRows(pool, id, { today: utcDay(clock.now()), baseOf });
  const completion = backgroundCompletion({ complete, logger: deps.logger, health: deps.health });
  const ctx: TransfersContext = {
    pool,
    clock,
    ledger,
    defaults,
    baseOf,
    policyValues: async (client: Pool | pg.PoolClient) => (await readPolicyRow(client)) ?? policyFromConfig(defaults),
    completion,
  };

  return {
    send: (sender, input) => send(ctx, sender, input),
    preview: (sender, input) => preview(ctx, sender, input),
    setReceiveDisabled: (userId, disabled) => setReceiveDisabled(pool, userId, disabled),
    list: (user, cursor, limit) => list(ctx, user, cursor, limit),
    policy: () => readPolicy(pool, defaults),
    savePolicy: (body, updatedBy) => savePolicy(pool, defaults, body, updatedBy),
    latest: (userId) => latest(ctx, userId),
    complete,
    close: () => completion.close(),
  };
}
