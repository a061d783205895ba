DROP VIEW "public"."quota_account_balances";--> statement-breakpoint
ALTER TABLE "quota_leases" ADD COLUMN "returned" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "quota_leases" ADD CONSTRAINT "quota_leases_returned_nonnegative" CHECK ("quota_leases"."returned" >= 0);--> statement-breakpoint
ALTER TABLE "quota_leases" ADD CONSTRAINT "quota_leases_returned_open" CHECK ("quota_leases"."status" = 'pending' or "quota_leases"."returned" = 0);--> statement-breakpoint
CREATE VIEW "public"."quota_account_balances" AS (select a.id, a.user_id, a.kind, a.period, a.credits, a.restored, a.debits_posted + u.n as debits_posted,
    a.debits_pending - u.n - u.returned as debits_pending
  from quota_accounts a
  cross join lateral (
    select coalesce(sum(l.posted), 0)::bigint as n, coalesce(sum(l.returned), 0)::bigint as returned
    from quota_leases l where l.account_id = a.id and l.status = 'pending'
  ) u);