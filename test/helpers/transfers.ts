import { randomUUID } from "node:crypto";
import type { Pool } from "../../src/db/pool.js";
import { sendRows, type TransferRow } from "../../src/transfers/transfers-sql.js";

const NO_LIMITS = {
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
