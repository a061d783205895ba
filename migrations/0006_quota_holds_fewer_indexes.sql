DROP INDEX "quota_holds_status_created_at_idx";--> statement-breakpoint
DROP INDEX "quota_holds_instance_id_idx";