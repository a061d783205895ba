import { randomUUID } from "node:crypto";
import type { Pool } from "../../src/db/pool.js";
import { sendRows, type TransferRow } from "../../src/transfers/transfers-sql.js";

/** Transfers' limits out of the way, for tests of the ledger's side of a transfer. */
export const NO_LIMITS = {
  enabled: true,
  minAmount: 1n,
  sendDailyLimit: 10n ** 15n,
  receiveDailyLimit: 10n ** 15n,
  serviceDailyLimit: 10n ** 15n,
};

/**
 * A transfer sent and left pending, as by a gateway process that stopped right after its send committed: nothing
 * completes it until the test does (completeRows, or the complete_transfer task it queued). No limits apply; the
 * sender's remaining does.
 */
export async function pendingTransfer(
  pool: Pool,
  t: { senderId: string; recipientId: string; amount: bigint; day: string; senderBase: bigint },
): Promise<TransferRow> {
  const id = randomUUID();
  const outcome = await sendRows(
    pool,
    {
      ...t,
      id,
      holdId: randomUUID(),
      idempotencyKey: `pending-${id}`,
      holdExpiresAt: new Date(Date.parse(`${t.day}T00:00:00Z`) + 2 * 86_400_000),
    },
    () => Promise.resolve(NO_LIMITS),
  );
  if (outcome.outcome !== "created") throw new Error(`the transfer of ${t.senderId} was not sent: ${outcome.outcome}`);
  return outcome.transfer;
}

/** Transfers still pending, of the user (sent or received) or of everyone. */
export async function pendingTransfers(pool: Pool, userId?: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    "select count(*)::int as n from token_transfers where status = 'pending' and ($1::uuid is null or $1::uuid in (sender_id, recipient_id))",
    [userId ?? null],
  );
  return rows[0]!.n;
}

/** The restorations a transfer made (one once it completed, however many ran its completion). */
export async function restorationsOf(pool: Pool, transferId: string): Promise<number> {
  const { rows } = await pool.query<{ n: number }>("select count(*)::int as n from quota_restorations where reference = $1", [transferId]);
  return rows[0]!.n;
}

/**
 * Runs `work` while the user's day is locked, as a long statement elsewhere would hold it: a completion to them
 * waits meanwhile, so what `work` sees of a pending transfer cannot race the sending gateway's completion. The
 * day must exist.
 */
export async function whileDayLocked<T>(pool: Pool, userId: string, work: () => Promise<T>): Promise<T> {
  const blocker = await pool.connect();
  try {
    await blocker.query("begin");
    await blocker.query("select 1 from quota_accounts where user_id = $1 and kind = 'daily_allowance' for update", [userId]);
    return await work();
  } finally {
    await blocker.query("rollback");
    blocker.release();
  }
}

/** Statements of this database waiting for a row lock (with `like`, those whose text matches). */
export async function lockWaits(pool: Pool, like = "%"): Promise<number> {
  const { rows } = await pool.query<{ n: number }>(
    "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and query like $1",
    [like],
  );
  return rows[0]!.n;
}
