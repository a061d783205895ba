ALTER TABLE "quota_holds" DROP CONSTRAINT "quota_holds_account_id_quota_accounts_id_fk";
--> statement-breakpoint
ALTER TABLE "quota_leases" ADD COLUMN "posted" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "quota_leases" ADD CONSTRAINT "quota_leases_posted_nonnegative" CHECK ("quota_leases"."posted" >= 0);--> statement-breakpoint
CREATE VIEW "public"."quota_account_balances" AS (select a.id, a.user_id, a.kind, a.period, a.credits, a.restored, a.debits_posted + u.n as debits_posted,
    a.debits_pending - u.n as debits_pending
  from quota_accounts a
  cross join lateral (select coalesce(sum(l.posted), 0)::bigint as n from quota_leases l where l.account_id = a.id and l.status = 'pending') u);--> statement-breakpoint
-- Deleting an account (with its user) deletes its holds, as the foreign key dropped above did: a request's hold
-- also goes with its lease (quota_holds.lease_id), a durable hold only by this.
CREATE FUNCTION "quota_accounts_delete_holds"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM "quota_holds" WHERE "account_id" = OLD."id";
  RETURN OLD;
END
$$;--> statement-breakpoint
CREATE TRIGGER "quota_accounts_delete_holds" AFTER DELETE ON "quota_accounts"
  FOR EACH ROW EXECUTE FUNCTION "quota_accounts_delete_holds"();
