ALTER TABLE "quota_leases" ADD COLUMN "posted" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "quota_leases" ADD CONSTRAINT "quota_leases_posted_nonnegative" CHECK ("quota_leases"."posted" >= 0);--> statement-breakpoint
CREATE VIEW "public"."quota_account_balances" AS (select a.id, a.user_id, a.kind, a.period, a.credits, a.restored, a.debits_posted + u.n as debits_posted,
    a.debits_pending - u.n as debits_pending
  from quota_accounts a
  cross join lateral (select coalesce(sum(l.posted), 0)::bigint as n from quota_leases l where l.account_id = a.id and l.status = 'pending') u);