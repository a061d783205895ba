import { sql } from "drizzle-orm";
import { bigint, boolean, check, index, integer, pgTable, smallint, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { users } from "../auth/schema.js";

// Daily token transfers (docs/billing.md, "Token transfers"). A transfer is a durable hold on the sender's day
// (taken with the send) and, when graphile-worker completes it, that hold posted and a restoration of the
// recipient's day: both on the ledger (src/quota). This row is the transfer's record and its idempotency key.
export const tokenTransfers = pgTable(
  "token_transfers",
  {
    id: uuid("id").primaryKey(),
    senderId: uuid("sender_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    recipientId: uuid("recipient_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    // Scoped to the sender: the same key with the same payload is the same transfer.
    idempotencyKey: text("idempotency_key").notNull(),
    amount: bigint("amount", { mode: "bigint" }).notNull(),
    // The UTC day whose allowances it moves; past it, a pending transfer ends with no effect.
    day: text("day").notNull(),
    status: text("status", { enum: ["pending", "completed", "refused"] }).notNull(),
    reason: text("reason"),
    // Placed on the recipient's day, and given back to the sender (what the recipient had not spent).
    applied: bigint("applied", { mode: "bigint" }),
    returned: bigint("returned", { mode: "bigint" }),
    // The durable hold on the sender's day (quota_holds.id).
    holdId: uuid("hold_id").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    completedAt: timestamp("completed_at", { withTimezone: true }),
  },
  (t) => [
    uniqueIndex("token_transfers_sender_key").on(t.senderId, t.idempotencyKey),
    index("token_transfers_sender_idx").on(t.senderId, t.createdAt),
    index("token_transfers_recipient_idx").on(t.recipientId, t.createdAt),
    index("token_transfers_day_idx").on(t.day, t.status),
    check("token_transfers_amount_positive", sql`${t.amount} > 0`),
  ],
);

// The policy: one row (id 1), changed with optimistic revision. Without a row the config's defaults apply, at
// revision 0.
export const tokenTransferPolicy = pgTable(
  "token_transfer_policy",
  {
    id: smallint("id").primaryKey(),
    revision: integer("revision").notNull(),
    enabled: boolean("enabled").notNull(),
    minAmount: bigint("min_amount", { mode: "bigint" }).notNull(),
    sendDailyLimit: bigint("send_daily_limit", { mode: "bigint" }).notNull(),
    receiveDailyLimit: bigint("receive_daily_limit", { mode: "bigint" }).notNull(),
    serviceDailyLimit: bigint("service_daily_limit", { mode: "bigint" }).notNull(),
    updatedBy: text("updated_by").notNull(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [check("token_transfer_policy_one_row", sql`${t.id} = 1`)],
);

// Previews per user and minute, so that the preview is no cheap way to enumerate accounts.
export const tokenTransferPreviews = pgTable(
  "token_transfer_previews",
  {
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    windowStart: timestamp("window_start", { withTimezone: true }).notNull(),
    count: integer("count").notNull(),
  },
  (t) => [uniqueIndex("token_transfer_previews_key").on(t.userId, t.windowStart)],
);
