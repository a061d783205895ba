import { randomUUID } from "node:crypto";
import { nextResetAt, utcDay } from "../time/day.js";
import type { TransfersContext } from "./context.js";
import { names, recipientOf } from "./recipients.js";
import { toRecord } from "./records.js";
import { keyReused, ownAccount, rateLimited, refusal, unavailable } from "./refusals.js";
import { countLookup, earlierTransfer, lookupsThisMinute, sendRows, type TransferRow } from "./transfers-sql.js";
import type { TransferRecord } from "./wire.js";

export interface SendInput {
  recipient: string;
  amount: number;
  idempotency_key: string;
}

/**
 * A send's answer: its transfer as it is now. A pending one is then completed in the background (the send has
 * committed; the answer does not wait): by the sending process, and again on a replay, whose first sending
 * process may have stopped.
 */
const sendAnswer = (ctx: TransfersContext, t: TransferRow, viewer: string) => {
  if (t.status === "pending") ctx.completion.start(t.id);
  return { pending: t.status === "pending", transfer: toRecord(t, viewer) };
};

/** Transfers.send: the sender is always the session's user. */
export async function send(
  ctx: TransfersContext,
  sender: { userId: string; plan: string },
  input: SendInput,
): Promise<{ pending: boolean; transfer: TransferRecord }> {
  const { pool, clock, defaults } = ctx;
  // A replay is answered whatever happened since (the recipient turned receiving off, the lookup budget ran out).
  const earlier = await earlierTransfer(pool, sender.userId, input.idempotency_key);
  if (earlier) {
    if (!names(input.recipient, earlier) || earlier.amount !== BigInt(input.amount)) throw keyReused();
    return sendAnswer(ctx, earlier, sender.userId);
  }
  // The lookup budget: past it, no send learns whether a recipient exists (docs/api.md, "Token transfers").
  if ((await lookupsThisMinute(pool, sender.userId, clock.now())) >= defaults.lookups_per_minute)
    throw rateLimited(defaults.lookups_per_minute);
  const recipient = await recipientOf(pool, input.recipient);
  if (recipient?.id === sender.userId) throw ownAccount();
  if (!recipient) {
    await countLookup(pool, sender.userId, clock.now());
    throw unavailable();
  }
  const now = clock.now();
  const outcome = await sendRows(
    pool,
    {
      id: randomUUID(),
      holdId: randomUUID(),
      senderId: sender.userId,
      recipientId: recipient.id,
      idempotencyKey: input.idempotency_key,
      amount: BigInt(input.amount),
      day: utcDay(now),
      senderBase: ctx.baseOf(sender.plan),
      // Past the day, the completion voids it; the ledger's expiry only if no completion ever ran.
      holdExpiresAt: new Date(nextResetAt(now).getTime() + 86_400_000),
    },
    ctx.policyValues,
  );
  if (outcome.outcome === "key_reused") throw keyReused();
  if (outcome.outcome === "refused") throw refusal(outcome, input.amount);
  return sendAnswer(ctx, outcome.transfer, sender.userId);
}
