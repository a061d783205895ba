import type { z } from "zod";
import { errors } from "../errors.js";
import { isUuid } from "../ids.js";
import type { TransfersContext } from "./context.js";
import { limitsOf } from "./limits.js";
import { outcomeOf, toRecord } from "./records.js";
import { historyRows, latestRows } from "./transfers-sql.js";
import type { adminTransfersAnswer, transfersAnswer } from "./wire.js";

// The lists of transfers: a user's own (sent and received, paged, with their limits), and the operators' latest.

const RECEIVE_FLAG = `select transfers_receive_disabled from users where id = $1::uuid`;

const CURSOR = /^(\d{4}-\d{2}-\d{2}T[\d:.]+Z)\|([0-9a-f-]{36})$/;

export async function list(
  ctx: TransfersContext,
  user: { userId: string; plan: string },
  cursor: string | undefined,
  limit: number,
): Promise<z.infer<typeof transfersAnswer>> {
  let after: { createdAt: Date; id: string } | null = null;
  if (cursor !== undefined) {
    const m = CURSOR.exec(cursor);
    if (!m || Number.isNaN(Date.parse(m[1]!))) throw errors.badRequest("cursor: not a cursor this list gave.", "cursor", "invalid_value");
    after = { createdAt: new Date(m[1]!), id: m[2]! };
  }
  const rows = await historyRows(ctx.pool, user.userId, after, limit + 1);
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  const flag = (await ctx.pool.query<{ transfers_receive_disabled: boolean }>(RECEIVE_FLAG, [user.userId])).rows[0];
  const answer: z.infer<typeof transfersAnswer> = {
    receive_disabled: flag?.transfers_receive_disabled ?? false,
    limits: await limitsOf(ctx, user),
    transfers: page.map((t) => toRecord(t, user.userId)),
  };
  if (rows.length > limit && last) answer.next_cursor = `${last.createdAt.toISOString()}|${last.id}`;
  return answer;
}

export async function latest(ctx: TransfersContext, userId: string | null): Promise<z.infer<typeof adminTransfersAnswer>> {
  if (userId !== null && !isUuid(userId)) throw errors.badRequest("user_id: not a user ID.", "user_id", "invalid_value");
  const rows = await latestRows(ctx.pool, userId);
  return {
    transfers: rows.map((t) => ({
      id: t.id,
      sender_id: t.senderId,
      sender_email: t.senderEmail,
      recipient_id: t.recipientId,
      recipient_email: t.recipientEmail,
      ...outcomeOf(t),
    })),
  };
}
