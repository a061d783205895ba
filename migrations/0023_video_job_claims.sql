ALTER TABLE "video_jobs" ADD COLUMN "next_poll_at" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "video_jobs" ADD COLUMN "poll_claim" uuid;--> statement-breakpoint
CREATE INDEX "video_jobs_due_idx" ON "video_jobs" USING btree ("next_poll_at") WHERE "video_jobs"."status" in ('queued', 'in_progress');