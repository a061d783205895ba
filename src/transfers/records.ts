import type { TransferRow } from "./transfers-sql.js";
import type { TransferRecord } from "./wire.js";

/** `ri***@example.com`: enough to recognise a recipient, not to learn an address. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf("@");
  const local = at < 0 ? email : email.slice(0, at);
  return `${local.slice(0, local.length > 2 ? 2 : 1)}***${at < 0 ? "" : email.slice(at)}`;
}

/** What a user's record and an admin's row both show of a transfer. */
export const outcomeOf = (t: TransferRow) => ({
  amount: Number(t.amount),
  status: t.status,
  reason: t.reason,
  applied: t.applied === null ? null : Number(t.applied),
  returned: t.returned === null ? null : Number(t.returned),
  day: t.day,
  created_at: t.createdAt.toISOString(),
  completed_at: t.completedAt?.toISOString() ?? null,
});

export const toRecord = (t: TransferRow, viewer: string): TransferRecord => {
  const sent = t.senderId === viewer;
  const counterparty = maskEmail(sent ? t.recipientEmail : t.senderEmail);
  return { id: t.id, direction: sent ? "sent" : "received", counterparty, ...outcomeOf(t) };
};
