import { sql } from "drizzle-orm";
import { bigint, bigserial, check, index, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { users } from "../auth/schema.js";

// One row per balance: owner + kind + period. Today only the daily allowance (period = UTC day YYYY-MM-DD);
// later kinds (reseller_usd, request_pack, ...) are new `kind` values on the same reserve/settle/release path.
export const quotaAccounts = pgTable(
  "quota_accounts",
  {
    id: bigserial("id", { mode: "bigint" }).primaryKey(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    kind: text("kind").notNull(),
    period: text("period").notNull(),
    credits: bigint("credits", { mode: "bigint" }).notNull(),
    debitsPosted: bigint("debits_posted", { mode: "bigint" }).notNull().default(sql`0`),
    debitsPending: bigint("debits_pending", { mode: "bigint" }).notNull().default(sql`0`),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("quota_accounts_user_kind_period_key").on(t.userId, t.kind, t.period),
    // A double release or double expiry would show up here as a failed statement instead of a silent
    // gift of quota. Posted debits may exceed credits (overshoot), so credits are not bounded by them.
    check("quota_accounts_debits_nonnegative", sql`${t.debitsPosted} >= 0 and ${t.debitsPending} >= 0`),
  ],
);

// A two-phase transfer against an account: pending -> posted (settle) | voided (release) | expired.
// An expired hold can still be posted: the request may finish after its process was presumed dead.
export const quotaHolds = pgTable(
  "quota_holds",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: bigint("account_id", { mode: "bigint" })
      .notNull()
      .references(() => quotaAccounts.id, { onDelete: "cascade" }),
    amount: bigint("amount", { mode: "bigint" }).notNull(),
    charged: bigint("charged", { mode: "bigint" }),
    status: text("status", { enum: ["pending", "posted", "voided", "expired"] }).notNull().default("pending"),
    requestId: text("request_id").notNull(),
    // No foreign key: instance rows are deleted on shutdown while their holds stay as history.
    instanceId: uuid("instance_id").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    resolvedAt: timestamp("resolved_at", { withTimezone: true }),
  },
  (t) => [
    index("quota_holds_status_created_at_idx").on(t.status, t.createdAt),
    index("quota_holds_instance_id_idx").on(t.instanceId),
    index("quota_holds_account_id_idx").on(t.accountId),
    check("quota_holds_amounts_nonnegative", sql`${t.amount} >= 0 and (${t.charged} is null or ${t.charged} >= 0)`),
  ],
);

// Live gateway processes, known by their heartbeat; a pending hold of a silent process is expired.
export const gatewayInstances = pgTable("gateway_instances", {
  id: uuid("id").primaryKey().defaultRandom(),
  startedAt: timestamp("started_at", { withTimezone: true }).notNull().defaultNow(),
  lastSeenAt: timestamp("last_seen_at", { withTimezone: true }).notNull().defaultNow(),
});
