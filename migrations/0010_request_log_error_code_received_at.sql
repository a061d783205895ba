ALTER TABLE "request_logs" ADD COLUMN "error_code" text;--> statement-breakpoint
ALTER TABLE "request_logs" ADD COLUMN "received_at" timestamp with time zone;