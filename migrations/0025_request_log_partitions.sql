-- The request log partitioned by UTC day of created_at (docs/architecture.md, "The request log"). This runs in the
-- migrator's one transaction, so it moves no rows: the old table is renamed and emptied afterwards in short batches
-- by the log_partitions task (src/analytics/partitions.ts), or dropped here at once when it is empty. The renames
-- take the old table's lock for as long as this transaction lasts, a few milliseconds of catalog changes.
ALTER TABLE "request_logs" RENAME TO "request_logs_unpartitioned";--> statement-breakpoint
ALTER INDEX "request_logs_pkey" RENAME TO "request_logs_unpartitioned_pkey";--> statement-breakpoint
ALTER INDEX "request_logs_user_created_idx" RENAME TO "request_logs_unpartitioned_user_created_idx";--> statement-breakpoint
ALTER INDEX "request_logs_created_at_idx" RENAME TO "request_logs_unpartitioned_created_at_idx";--> statement-breakpoint
ALTER INDEX "request_logs_server_errors_idx" RENAME TO "request_logs_unpartitioned_server_errors_idx";--> statement-breakpoint
-- LIKE keeps the columns in the old order, with their NOT NULLs and the quota check.
CREATE TABLE "request_logs" (LIKE "request_logs_unpartitioned" INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE ("created_at");--> statement-breakpoint
ALTER TABLE "request_logs" ADD CONSTRAINT "request_logs_pkey" PRIMARY KEY ("request_id","created_at");--> statement-breakpoint
CREATE INDEX "request_logs_user_created_idx" ON "request_logs" USING btree ("user_id","created_at" DESC NULLS FIRST,"request_id" DESC NULLS FIRST);--> statement-breakpoint
CREATE INDEX "request_logs_created_at_idx" ON "request_logs" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "request_logs_server_errors_idx" ON "request_logs" USING btree ("created_at","public_model","error_code") WHERE "request_logs"."status" >= 500;--> statement-breakpoint
-- The safety net: a row of a day whose partition does not exist yet is never refused (the ledger's journal writes in
-- the charge's own statement).
CREATE TABLE "request_logs_default" PARTITION OF "request_logs" DEFAULT;--> statement-breakpoint
CREATE TABLE "request_log_days" (
	"day" date PRIMARY KEY NOT NULL,
	"rolled_up_at" timestamp with time zone DEFAULT now() NOT NULL
);--> statement-breakpoint
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM "request_logs_unpartitioned") THEN
    DROP TABLE "request_logs_unpartitioned";
  END IF;
END $$;
