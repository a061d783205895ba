CREATE TABLE "quota_leases" (
	"id" uuid PRIMARY KEY NOT NULL,
	"account_id" bigint NOT NULL,
	"instance_id" uuid NOT NULL,
	"amount" bigint DEFAULT 0 NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"seq" integer DEFAULT 0 NOT NULL,
	"last_grant" bigint DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"resolved_at" timestamp with time zone,
	CONSTRAINT "quota_leases_amount_nonnegative" CHECK ("quota_leases"."amount" >= 0)
);
--> statement-breakpoint
ALTER TABLE "quota_holds" ADD COLUMN "lease_id" uuid;--> statement-breakpoint
ALTER TABLE "quota_leases" ADD CONSTRAINT "quota_leases_account_id_quota_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."quota_accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "quota_leases_status_idx" ON "quota_leases" USING btree ("status");--> statement-breakpoint
CREATE INDEX "quota_leases_account_id_idx" ON "quota_leases" USING btree ("account_id");--> statement-breakpoint
ALTER TABLE "quota_holds" ADD CONSTRAINT "quota_holds_lease_id_quota_leases_id_fk" FOREIGN KEY ("lease_id") REFERENCES "public"."quota_leases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "quota_holds_lease_id_idx" ON "quota_holds" USING btree ("lease_id");