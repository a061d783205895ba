CREATE TABLE "reseller_credits" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"amount" bigint NOT NULL,
	"note" text DEFAULT '' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "reseller_credits_amount_positive" CHECK ("reseller_credits"."amount" > 0)
);
--> statement-breakpoint
ALTER TABLE "request_logs" ADD COLUMN "cost_usd" numeric;--> statement-breakpoint
ALTER TABLE "request_logs" ADD COLUMN "upstream_cost_usd" numeric;--> statement-breakpoint
ALTER TABLE "reseller_credits" ADD CONSTRAINT "reseller_credits_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "reseller_credits_user_id_idx" ON "reseller_credits" USING btree ("user_id");