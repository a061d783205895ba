import type pg from "pg";
import { inTransaction } from "../db/transaction.js";
import { isoWeek, nextWeekAt } from "../time/week.js";
import { ensureAccount } from "./account-sql.js";
import { keyOf, revisionOf, type LedgerContext } from "./ledger-accounts.js";
import { readResetsRows, useResetIn, type UseResetOutcome } from "./resets-sql.js";
import type { ResetBalance, UseResetInput } from "./types.js";

// The ledger's reserve resets (docs/billing.md, "Reserve resets"): a use by hand, and a user's resets now. The
// statements are resets-sql.ts's; the automatic use in admission is the escrow's (ledger-escrows.ts).

/** One use, under the day's lock (created if needed); on `client`, inside the caller's transaction. */
export async function useReset(ctx: LedgerContext, input: UseResetInput, client?: pg.PoolClient): Promise<UseResetOutcome> {
  const now = ctx.clock.now();
  const day = keyOf({ kind: "daily_allowance", userId: input.userId, base: input.dailyBase }, now);
  const revision = revisionOf(ctx, input);
  const use = async (on: pg.PoolClient) => {
    await ensureAccount(on, day.key, day.base, revision);
    return useResetIn(on, {
      userId: input.userId,
      id: input.id,
      day: day.key.period,
      weeklyBase: input.weeklyBase,
      baseRevision: revision,
      nowIso: now.toISOString(),
      trigger: input.trigger,
    });
  };
  return client ? use(client) : inTransaction(ctx.pool, use);
}

export async function readResets(ctx: LedgerContext, userId: string, weeklyBase: bigint, client?: pg.PoolClient): Promise<ResetBalance> {
  const now = ctx.clock.now();
  const week = isoWeek(now);
  const rows = await readResetsRows(client ?? ctx.pool, userId, week, now.toISOString());
  const left = weeklyBase - rows.weeklyUsed;
  return Object.assign(rows, {
    week,
    weeklyRenewsAt: nextWeekAt(now),
    weeklyAllowance: weeklyBase,
    weeklyLeft: left > 0n ? left : 0n,
  });
}
