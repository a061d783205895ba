CREATE TABLE "gateway_instances" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"started_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "quota_accounts" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"period" text NOT NULL,
	"credits" bigint NOT NULL,
	"debits_posted" bigint DEFAULT 0 NOT NULL,
	"debits_pending" bigint DEFAULT 0 NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "quota_accounts_debits_nonnegative" CHECK ("quota_accounts"."debits_posted" >= 0 and "quota_accounts"."debits_pending" >= 0)
);
--> statement-breakpoint
CREATE TABLE "quota_holds" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"account_id" bigint NOT NULL,
	"amount" bigint NOT NULL,
	"charged" bigint,
	"status" text DEFAULT 'pending' NOT NULL,
	"request_id" text NOT NULL,
	"instance_id" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"resolved_at" timestamp with time zone,
	CONSTRAINT "quota_holds_amounts_nonnegative" CHECK ("quota_holds"."amount" >= 0 and ("quota_holds"."charged" is null or "quota_holds"."charged" >= 0))
);
--> statement-breakpoint
ALTER TABLE "quota_accounts" ADD CONSTRAINT "quota_accounts_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "quota_holds" ADD CONSTRAINT "quota_holds_account_id_quota_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."quota_accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "quota_accounts_user_kind_period_key" ON "quota_accounts" USING btree ("user_id","kind","period");--> statement-breakpoint
CREATE INDEX "quota_holds_status_created_at_idx" ON "quota_holds" USING btree ("status","created_at");--> statement-breakpoint
CREATE INDEX "quota_holds_instance_id_idx" ON "quota_holds" USING btree ("instance_id");--> statement-breakpoint
CREATE INDEX "quota_holds_account_id_idx" ON "quota_holds" USING btree ("account_id");