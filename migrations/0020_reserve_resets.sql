CREATE TABLE "quota_reset_grants" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"account_id" bigint NOT NULL,
	"count" integer NOT NULL,
	"expires_at" timestamp with time zone,
	"note" text DEFAULT '' NOT NULL,
	"granted_by" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "quota_reset_grants_count_positive" CHECK ("quota_reset_grants"."count" > 0)
);
--> statement-breakpoint
CREATE TABLE "quota_reset_uses" (
	"id" uuid PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"account_id" bigint NOT NULL,
	"kind" text NOT NULL,
	"day" text NOT NULL,
	"restored" bigint NOT NULL,
	"trigger" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "quota_reset_uses_restored_nonnegative" CHECK ("quota_reset_uses"."restored" >= 0)
);
--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "auto_reset_enabled" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "quota_reset_grants" ADD CONSTRAINT "quota_reset_grants_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "quota_reset_grants" ADD CONSTRAINT "quota_reset_grants_account_id_quota_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."quota_accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "quota_reset_uses" ADD CONSTRAINT "quota_reset_uses_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "quota_reset_uses" ADD CONSTRAINT "quota_reset_uses_account_id_quota_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."quota_accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "quota_reset_grants_user_id_idx" ON "quota_reset_grants" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "quota_reset_grants_account_id_idx" ON "quota_reset_grants" USING btree ("account_id");--> statement-breakpoint
CREATE INDEX "quota_reset_uses_user_id_idx" ON "quota_reset_uses" USING btree ("user_id");