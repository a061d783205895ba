import { sql } from "drizzle-orm";
import { bigint, bigserial, check, index, integer, pgTable, pgView, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";
import { users } from "../auth/schema.js";

// One row per balance: owner + kind + period (account-kinds.ts). The daily allowance (period = UTC day
// YYYY-MM-DD, credits = the plan's allowance, set on every lease sync) and the reseller USD balance (period
// "balance", credits = what the operator credited, in nano-dollars); `restored` is what restorations (reserve
// resets, received transfers) added on top, which no sync overwrites. Later kinds are new `kind` values on the
// same reserve/settle/release path.
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
    // The revision of the view of the plan that set `credits` (account-kinds.ts, baseRevision): a process with an
    // older view never overwrites a newer one.
    creditsRevision: bigint("credits_revision", { mode: "bigint" })
      .notNull()
      .default(sql`0`),
    restored: bigint("restored", { mode: "bigint" })
      .notNull()
      .default(sql`0`),
    debitsPosted: bigint("debits_posted", { mode: "bigint" })
      .notNull()
      .default(sql`0`),
    debitsPending: bigint("debits_pending", { mode: "bigint" })
      .notNull()
      .default(sql`0`),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("quota_accounts_user_kind_period_key").on(t.userId, t.kind, t.period),
    // A double release or double expiry would show up here as a failed statement instead of a silent
    // gift of quota. Posted debits may exceed credits (overshoot), so credits are not bounded by them.
    check("quota_accounts_debits_nonnegative", sql`${t.debitsPosted} >= 0 and ${t.debitsPending} >= 0`),
    check("quota_accounts_restored_nonnegative", sql`${t.restored} >= 0`),
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
    amount: bigint("amount", { mode: "bigint" })
      .notNull()
      .default(sql`0`),
    // Units posted out of `amount` by syncs that only post (lease-sql.ts), not yet folded into the account's
    // debits_posted: still counted in its debits_pending. The lease's next full sync, its expiry, its direct post
    // or a refund of its charges folds them (docs/billing.md, "Escrow"), so an ended lease holds none.
    posted: bigint("posted", { mode: "bigint" })
      .notNull()
      .default(sql`0`),
    // Units given back by syncs that only post (another process asked for them: give-back.ts), out of `amount` and
    // still counted in the account's debits_pending: a give-back so takes no lock on the account row. Any full sync
    // on the account gathers them into what it has free (lease-sql.ts), as do the lease's own end and expiry.
    returned: bigint("returned", { mode: "bigint" })
      .notNull()
      .default(sql`0`),
    status: text("status", { enum: ["pending", "closed", "expired"] })
      .notNull()
      .default("pending"),
    seq: integer("seq").notNull().default(0),
    lastGrant: bigint("last_grant", { mode: "bigint" })
      .notNull()
      .default(sql`0`),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    resolvedAt: timestamp("resolved_at", { withTimezone: true }),
  },
  (t) => [
    index("quota_leases_status_idx").on(t.status),
    index("quota_leases_account_id_idx").on(t.accountId),
    // The retention finds ended leases by it (retention-sql.ts); it changes only when the status does, which
    // is indexed already, so a sync's update stays as cheap as before.
    index("quota_leases_resolved_at_idx").on(t.resolvedAt),
    check("quota_leases_amount_nonnegative", sql`${t.amount} >= 0`),
    check("quota_leases_posted_nonnegative", sql`${t.posted} >= 0`),
    check("quota_leases_returned_nonnegative", sql`${t.returned} >= 0`),
    // Whatever ends a lease gathers what it gave back: none is left on an ended one.
    check("quota_leases_returned_open", sql`${t.status} = 'pending' or ${t.returned} = 0`),
  ],
);

// Every account as its readers see it: the units its open leases posted by syncs that only post (not folded into
// `debits_posted` yet, still counted in `debits_pending`: quota_leases.posted) moved to the posted side, and the
// units they gave back that no full sync gathered yet (quota_leases.returned) to the free side: no process holds
// them. The reconciliation, the balances shown and the tests read this.
export const quotaAccountBalances = pgView("quota_account_balances", {
  id: bigint("id", { mode: "bigint" }).notNull(),
  userId: uuid("user_id").notNull(),
  kind: text("kind").notNull(),
  period: text("period").notNull(),
  credits: bigint("credits", { mode: "bigint" }).notNull(),
  restored: bigint("restored", { mode: "bigint" }).notNull(),
  debitsPosted: bigint("debits_posted", { mode: "bigint" }).notNull(),
  debitsPending: bigint("debits_pending", { mode: "bigint" }).notNull(),
}).as(
  sql`select a.id, a.user_id, a.kind, a.period, a.credits, a.restored, a.debits_posted + u.n as debits_posted,
    a.debits_pending - u.n - u.returned as debits_pending
  from quota_accounts a
  cross join lateral (
    select coalesce(sum(l.posted), 0)::bigint as n, coalesce(sum(l.returned), 0)::bigint as returned
    from quota_leases l where l.account_id = a.id and l.status = 'pending'
  ) u`,
);

// One row per metered request: its reservation (`amount`) and how it was resolved, posted with the real
// charge or voided, written when the request resolves in its lease's sync. And one row per durable hold (no
// lease; durable-sql.ts): written pending when taken, then posted, voided or expired (after `expires_at`).
// Resolved rows are deleted `retention.ledger_days` after they resolved, into quota_hold_rollups (retention-sql.ts).
export const quotaHolds = pgTable(
  "quota_holds",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    // No foreign key to the account: its check would take FOR KEY SHARE on the account row, and a sync that only
    // posts inserts holds without holding that row, so on a hot account those locks came from outside and
    // deadlocked the statements that lock the row and then update it (docs/billing.md, "Escrow"). A request's hold
    // reaches its account through its lease; a durable hold is written by a statement that locks its account; and
    // deleting an account deletes its holds (the trigger quota_accounts_delete_holds, migrations/0027).
    accountId: bigint("account_id", { mode: "bigint" }).notNull(),
    leaseId: uuid("lease_id").references(() => quotaLeases.id, { onDelete: "cascade" }),
    amount: bigint("amount", { mode: "bigint" }).notNull(),
    charged: bigint("charged", { mode: "bigint" }),
    status: text("status", { enum: ["pending", "posted", "voided", "expired"] })
      .notNull()
      .default("pending"),
    // The request's id, or what a durable hold is for (`video:<job>`).
    requestId: text("request_id").notNull(),
    // No foreign key: instance rows are deleted on shutdown while their holds stay as history. Null for a
    // durable hold, which belongs to no process.
    instanceId: uuid("instance_id"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    resolvedAt: timestamp("resolved_at", { withTimezone: true }),
    // A durable hold's expiry, by the gateway's clock; null for a request's hold.
    expiresAt: timestamp("expires_at", { withTimezone: true }),
  },
  (t) => [
    // Written once per request and read rarely: only the foreign keys are indexed, the pending durable holds
    // the expiry looks for, and the resolution time the retention deletes by (retention-sql.ts; without it
    // each of its batches would scan the table). The rows of one sync share one resolved_at (the statement's
    // now()), so their entries land together on the index's rightmost page as one deduplicated key.
    index("quota_holds_account_id_idx").on(t.accountId),
    index("quota_holds_lease_id_idx").on(t.leaseId),
    index("quota_holds_resolved_at_idx").on(t.resolvedAt),
    index("quota_holds_durable_pending_idx")
      .on(t.expiresAt)
      .where(sql`${t.status} = 'pending' and ${t.leaseId} is null`),
    check("quota_holds_amounts_nonnegative", sql`${t.amount} >= 0 and (${t.charged} is null or ${t.charged} >= 0)`),
  ],
);

// What the retention deleted of an account's resolved holds (docs/billing.md, "Retention"), added in the
// statement that deletes them (retention-sql.ts), so the account still reconciles: its posted debits are the
// charges of its posted holds plus `charged` here. `holds` counts the rows deleted, whatever their outcome.
export const quotaHoldRollups = pgTable(
  "quota_hold_rollups",
  {
    accountId: bigint("account_id", { mode: "bigint" })
      .primaryKey()
      .references(() => quotaAccounts.id, { onDelete: "cascade" }),
    holds: bigint("holds", { mode: "bigint" }).notNull(),
    charged: bigint("charged", { mode: "bigint" }).notNull(),
  },
  (t) => [check("quota_hold_rollups_nonnegative", sql`${t.holds} >= 0 and ${t.charged} >= 0`)],
);

// Live gateway processes, known by their heartbeat. A process silent too long is fenced (`fenced_at`, set under
// the row's lock after reading its heartbeat again): its leases are expired, and it never admits on this id again
// (instances.ts, "Fencing").
export const gatewayInstances = pgTable("gateway_instances", {
  id: uuid("id").primaryKey().defaultRandom(),
  startedAt: timestamp("started_at", { withTimezone: true }).notNull().defaultNow(),
  lastSeenAt: timestamp("last_seen_at", { withTimezone: true }).notNull().defaultNow(),
  fencedAt: timestamp("fenced_at", { withTimezone: true }),
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

// Every restoration of an account (a reserve reset, a received transfer), written in the statement that adds it
// to the account's `restored` (restore-sql.ts): the account says how much, this says when, why and which
// operation. (source, reference) is the operation's identity: applying it again is no second effect.
export const quotaRestorations = pgTable(
  "quota_restorations",
  {
    id: bigserial("id", { mode: "bigint" }).primaryKey(),
    accountId: bigint("account_id", { mode: "bigint" })
      .notNull()
      .references(() => quotaAccounts.id, { onDelete: "cascade" }),
    amount: bigint("amount", { mode: "bigint" }).notNull(),
    source: text("source").notNull(),
    reference: text("reference").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("quota_restorations_source_reference_key").on(t.source, t.reference),
    index("quota_restorations_account_id_idx").on(t.accountId),
    check("quota_restorations_amount_nonnegative", sql`${t.amount} >= 0`),
  ],
);

// Every grant of gifted reserve resets (docs/billing.md, "Reserve resets"), written in the statement that adds its
// count to the credits of the user's gifted_resets account of its expiry (resets-sql.ts): the account says how
// many are left, this says who gave them, when and why.
export const quotaResetGrants = pgTable(
  "quota_reset_grants",
  {
    id: bigserial("id", { mode: "bigint" }).primaryKey(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    accountId: bigint("account_id", { mode: "bigint" })
      .notNull()
      .references(() => quotaAccounts.id, { onDelete: "cascade" }),
    count: integer("count").notNull(),
    // Null: the gift never expires.
    expiresAt: timestamp("expires_at", { withTimezone: true }),
    note: text("note").notNull().default(""),
    // Who granted: `admin:<user id>` through the API, `cli` through the command.
    grantedBy: text("granted_by").notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("quota_reset_grants_user_id_idx").on(t.userId),
    index("quota_reset_grants_account_id_idx").on(t.accountId),
    check("quota_reset_grants_count_positive", sql`${t.count} > 0`),
  ],
);

// Every use of a reserve reset, written in the transaction that posts one reset on the weekly or gifted account
// (a posted hold of 1 with request_id `reset:<id>`) and restores the day's allowance (a restoration of source
// `reserve_reset`, reference = this id). The id is the use's identity: using it again is the first outcome.
export const quotaResetUses = pgTable(
  "quota_reset_uses",
  {
    id: uuid("id").primaryKey(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    // The weekly_resets or gifted_resets account the reset came from.
    accountId: bigint("account_id", { mode: "bigint" })
      .notNull()
      .references(() => quotaAccounts.id, { onDelete: "cascade" }),
    kind: text("kind", { enum: ["weekly", "gifted"] }).notNull(),
    // The UTC day whose allowance it restored, and by how many quota units.
    day: text("day").notNull(),
    restored: bigint("restored", { mode: "bigint" }).notNull(),
    trigger: text("trigger", { enum: ["manual", "automatic"] }).notNull(),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("quota_reset_uses_user_id_idx").on(t.userId), check("quota_reset_uses_restored_nonnegative", sql`${t.restored} >= 0`)],
);
