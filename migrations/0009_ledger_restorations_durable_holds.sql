CREATE TABLE "quota_restorations" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"account_id" bigint NOT NULL,
	"amount" bigint NOT NULL,
	"source" text NOT NULL,
	"reference" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "quota_restorations_amount_nonnegative" CHECK ("quota_restorations"."amount" >= 0)
);
--> statement-breakpoint
ALTER TABLE "quota_holds" ALTER COLUMN "instance_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "quota_accounts" ADD COLUMN "restored" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "quota_holds" ADD COLUMN "expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "quota_restorations" ADD CONSTRAINT "quota_restorations_account_id_quota_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."quota_accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "quota_restorations_source_reference_key" ON "quota_restorations" USING btree ("source","reference");--> statement-breakpoint
CREATE INDEX "quota_restorations_account_id_idx" ON "quota_restorations" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "quota_holds_durable_pending_idx" ON "quota_holds" USING btree ("expires_at") WHERE "quota_holds"."status" = 'pending' and "quota_holds"."lease_id" is null;--> statement-breakpoint
ALTER TABLE "quota_accounts" ADD CONSTRAINT "quota_accounts_restored_nonnegative" CHECK ("quota_accounts"."restored" >= 0);