import type { z } from "zod";
import { nextResetAt, utcDay } from "../time/day.js";
import type { TransfersContext } from "./context.js";
import { recipientOf } from "./recipients.js";
import { maskEmail } from "./records.js";
import { rateLimited } from "./refusals.js";
import { refusalOf, transferableOf, type DayTotals } from "./rules.js";
import { countLookup, dayTotals } from "./transfers-sql.js";
import type { previewAnswer } from "./wire.js";

// What a user may send now: their limits today, and a send's preview (the send's checks, moving nothing).

/** The user's remaining units today (allowance + restored − used − held), as the send reads them. */
const remainingOf = async (ctx: TransfersContext, user: { userId: string; plan: string }) =>
  (await ctx.ledger.balance({ kind: "daily_allowance", userId: user.userId, base: ctx.baseOf(user.plan) })).remaining;

export async function limitsOf(ctx: TransfersContext, user: { userId: string; plan: string }) {
  const now = ctx.clock.now();
  const day = utcDay(now);
  const p = await ctx.policyValues(ctx.pool);
  const totals: DayTotals = await dayTotals(ctx.pool, day, user.userId, user.userId);
  const left = (limit: bigint, used: bigint) => Number(limit > used ? limit - used : 0n);
  return {
    enabled: p.enabled,
    min_amount: Number(p.minAmount),
    send_daily_limit: Number(p.sendDailyLimit),
    sending_left: left(p.sendDailyLimit, totals.sent),
    receive_daily_limit: Number(p.receiveDailyLimit),
    receiving_left: left(p.receiveDailyLimit, totals.received),
    service_left: left(p.serviceDailyLimit, totals.service),
    transferable: Number(transferableOf(await remainingOf(ctx, user), totals)),
    day,
    renews_at: nextResetAt(now).toISOString(),
  };
}

export async function preview(
  ctx: TransfersContext,
  sender: { userId: string; plan: string },
  input: { recipient: string; amount: number },
): Promise<z.infer<typeof previewAnswer>> {
  const { pool, clock, defaults } = ctx;
  if ((await countLookup(pool, sender.userId, clock.now())) > defaults.lookups_per_minute) throw rateLimited(defaults.lookups_per_minute);
  const recipient = await recipientOf(pool, input.recipient);
  const answer = (reason: z.infer<typeof previewAnswer>["reason"], shown: string | null) => ({
    recipient: shown,
    amount: input.amount,
    allowed: reason === null,
    reason,
  });
  // An unknown recipient and one who does not accept transfers: the same answer.
  if (!recipient) return answer("recipient_unavailable", null);
  if (recipient.id === sender.userId) return answer("own_account", null);
  const shown = maskEmail(recipient.email);
  const day = utcDay(clock.now());
  const totals = await dayTotals(pool, day, sender.userId, recipient.id);
  const transferable = transferableOf(await remainingOf(ctx, sender), totals);
  return answer(refusalOf(await ctx.policyValues(pool), totals, BigInt(input.amount), transferable)?.refused ?? null, shown);
}
