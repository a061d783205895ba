CREATE TABLE "request_log_rollups" (
	"day" date NOT NULL,
	"user_id" uuid NOT NULL,
	"public_model" text NOT NULL,
	"route" text NOT NULL,
	"requests" bigint NOT NULL,
	"errors" bigint NOT NULL,
	"estimated" bigint NOT NULL,
	"input_tokens" bigint NOT NULL,
	"output_tokens" bigint NOT NULL,
	"cached_tokens" bigint NOT NULL,
	"quota_charged" bigint NOT NULL,
	"cost_usd" numeric NOT NULL,
	"upstream_cost_usd" numeric NOT NULL,
	"upstream_unpriced" bigint NOT NULL,
	CONSTRAINT "request_log_rollups_pkey" PRIMARY KEY("day","user_id","public_model","route")
);
--> statement-breakpoint
CREATE TABLE "quota_hold_rollups" (
	"account_id" bigint PRIMARY KEY NOT NULL,
	"holds" bigint NOT NULL,
	"charged" bigint NOT NULL,
	CONSTRAINT "quota_hold_rollups_nonnegative" CHECK ("quota_hold_rollups"."holds" >= 0 and "quota_hold_rollups"."charged" >= 0)
);
--> statement-breakpoint
ALTER TABLE "quota_hold_rollups" ADD CONSTRAINT "quota_hold_rollups_account_id_quota_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."quota_accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "request_logs_created_at_idx" ON "request_logs" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "quota_holds_resolved_at_idx" ON "quota_holds" USING btree ("resolved_at");--> statement-breakpoint
CREATE INDEX "quota_leases_resolved_at_idx" ON "quota_leases" USING btree ("resolved_at");