ALTER TABLE "users" ADD COLUMN "plan_revision" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "gateway_instances" ADD COLUMN "fenced_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "quota_accounts" ADD COLUMN "credits_revision" bigint DEFAULT 0 NOT NULL;