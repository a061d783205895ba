import { sql } from "drizzle-orm";
import { bigint, bigserial, check, index, integer, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { users } from "../auth/schema.js";

// One row per balance: owner + kind + period. The daily allowance (period = UTC day YYYY-MM-DD, credits = the
// plan's allowance) and the reseller USD balance (period "balance", credits = what the operator credited, in
// nano-dollars); later kinds (request_pack, ...) are new `kind` values on the same reserve/settle/release path.
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

// A gateway process's escrow on an account (docs/billing.md, "Escrow"): a pending debit the process admits
// requests against in memory. Granted, drawn down and returned by one statement per sync (lease-sql.ts);
// `seq` numbers those statements so a retried one is applied once; `last_grant` is its reply, kept for that
// retry. Expired when its process stops heartbeating; closed when returned whole.
export const quotaLeases = pgTable(
  "quota_leases",
  {
    id: uuid("id").primaryKey(),
    accountId: bigint("account_id", { mode: "bigint" })
      .notNull()
      .references(() => quotaAccounts.id, { onDelete: "cascade" }),
    // No foreign key: instance rows are deleted on shutdown while their leases stay as history.
    instanceId: uuid("instance_id").notNull(),
    amount: bigint("amount", { mode: "bigint" }).notNull().default(sql`0`),
    status: text("status", { enum: ["pending", "closed", "expired"] }).notNull().default("pending"),
    seq: integer("seq").notNull().default(0),
    lastGrant: bigint("last_grant", { mode: "bigint" }).notNull().default(sql`0`),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    resolvedAt: timestamp("resolved_at", { withTimezone: true }),
  },
  (t) => [
    index("quota_leases_status_idx").on(t.status),
    index("quota_leases_account_id_idx").on(t.accountId),
    check("quota_leases_amount_nonnegative", sql`${t.amount} >= 0`),
  ],
);

// One row per metered request: its reservation (`amount`) and how it was resolved, posted with the real
// charge or voided. Written when the request resolves, drawn from its process's lease; `pending` and
// `expired` are the states of holds made before leases existed.
export const quotaHolds = pgTable(
  "quota_holds",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: bigint("account_id", { mode: "bigint" })
      .notNull()
      .references(() => quotaAccounts.id, { onDelete: "cascade" }),
    leaseId: uuid("lease_id").references(() => quotaLeases.id, { onDelete: "cascade" }),
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
    // Written once per request and read rarely: only the foreign keys are indexed.
    index("quota_holds_account_id_idx").on(t.accountId),
    index("quota_holds_lease_id_idx").on(t.leaseId),
    check("quota_holds_amounts_nonnegative", sql`${t.amount} >= 0 and (${t.charged} is null or ${t.charged} >= 0)`),
  ],
);

// Live gateway processes, known by their heartbeat; the pending lease of a silent process is expired.
export const gatewayInstances = pgTable("gateway_instances", {
  id: uuid("id").primaryKey().defaultRandom(),
  startedAt: timestamp("started_at", { withTimezone: true }).notNull().defaultNow(),
  lastSeenAt: timestamp("last_seen_at", { withTimezone: true }).notNull().defaultNow(),
});

// Every credit an operator gave a reseller balance (nano-dollars), written in the statement that adds it to the
// account's credits: the account says how much, this says when and why.
export const resellerCredits = pgTable(
  "reseller_credits",
  {
    id: bigserial("id", { mode: "bigint" }).primaryKey(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    amount: bigint("amount", { mode: "bigint" }).notNull(),
    note: text("note").notNull().default(""),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("reseller_credits_user_id_idx").on(t.userId), check("reseller_credits_amount_positive", sql`${t.amount} > 0`)],
);
