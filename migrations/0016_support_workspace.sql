CREATE TABLE "support_cases" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"owner_user_id" uuid,
	"source_ref" text,
	"request_id" text,
	"locale" text NOT NULL,
	"status" text DEFAULT 'open' NOT NULL,
	"staff_hold" boolean DEFAULT false NOT NULL,
	"handoff" boolean DEFAULT false NOT NULL,
	"staff_actor" text,
	"revision" integer DEFAULT 1 NOT NULL,
	"facts" jsonb,
	"card" jsonb,
	"incident_id" uuid,
	"model_calls" integer DEFAULT 0 NOT NULL,
	"tool_calls" integer DEFAULT 0 NOT NULL,
	"input_tokens" bigint DEFAULT 0 NOT NULL,
	"output_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_usd" numeric DEFAULT '0',
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"resolved_at" timestamp with time zone,
	CONSTRAINT "support_cases_owner_or_source" CHECK ("support_cases"."owner_user_id" is not null or "support_cases"."source_ref" is not null)
);
--> statement-breakpoint
CREATE TABLE "support_drafts" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"case_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"content" text NOT NULL,
	"job_id" uuid,
	"reviewed" boolean DEFAULT false NOT NULL,
	"author" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "support_evidence" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"case_id" uuid NOT NULL,
	"job_id" uuid NOT NULL,
	"ref" text NOT NULL,
	"kind" text NOT NULL,
	"content" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "support_incidents" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"public_model" text NOT NULL,
	"error_code" text NOT NULL,
	"title" text NOT NULL,
	"status" text DEFAULT 'candidate' NOT NULL,
	"public_summary" text,
	"published_at" timestamp with time zone,
	"affected" jsonb,
	"technical" jsonb,
	"corroborated_at" timestamp with time zone,
	"updated_by" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "support_jobs" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"case_id" uuid NOT NULL,
	"kind" text NOT NULL,
	"revision" integer NOT NULL,
	"status" text DEFAULT 'queued' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"available_at" timestamp with time zone DEFAULT now() NOT NULL,
	"lease_token_hash" text,
	"lease_expires_at" timestamp with time zone,
	"worker_id" text,
	"outcome" jsonb,
	"error_code" text,
	"model_calls" integer DEFAULT 0 NOT NULL,
	"tool_calls" integer DEFAULT 0 NOT NULL,
	"input_tokens" bigint DEFAULT 0 NOT NULL,
	"output_tokens" bigint DEFAULT 0 NOT NULL,
	"cost_usd" numeric DEFAULT '0',
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"finished_at" timestamp with time zone,
	CONSTRAINT "support_jobs_attempts_range" CHECK ("support_jobs"."attempts" between 0 and 3)
);
--> statement-breakpoint
CREATE TABLE "support_messages" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "support_messages_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"case_id" uuid NOT NULL,
	"role" text NOT NULL,
	"content" text NOT NULL,
	"job_id" uuid,
	"source_message_id" text,
	"author" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "support_cases" ADD CONSTRAINT "support_cases_owner_user_id_users_id_fk" FOREIGN KEY ("owner_user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "support_cases" ADD CONSTRAINT "support_cases_incident_id_support_incidents_id_fk" FOREIGN KEY ("incident_id") REFERENCES "public"."support_incidents"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "support_drafts" ADD CONSTRAINT "support_drafts_case_id_support_cases_id_fk" FOREIGN KEY ("case_id") REFERENCES "public"."support_cases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "support_evidence" ADD CONSTRAINT "support_evidence_case_id_support_cases_id_fk" FOREIGN KEY ("case_id") REFERENCES "public"."support_cases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "support_jobs" ADD CONSTRAINT "support_jobs_case_id_support_cases_id_fk" FOREIGN KEY ("case_id") REFERENCES "public"."support_cases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "support_messages" ADD CONSTRAINT "support_messages_case_id_support_cases_id_fk" FOREIGN KEY ("case_id") REFERENCES "public"."support_cases"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "support_cases_open_request_key" ON "support_cases" USING btree ("owner_user_id","request_id") WHERE "support_cases"."status" = 'open' and "support_cases"."owner_user_id" is not null and "support_cases"."request_id" is not null;--> statement-breakpoint
CREATE UNIQUE INDEX "support_cases_source_ref_key" ON "support_cases" USING btree ("source_ref") WHERE "support_cases"."source_ref" is not null;--> statement-breakpoint
CREATE INDEX "support_cases_owner_created_idx" ON "support_cases" USING btree ("owner_user_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "support_cases_updated_idx" ON "support_cases" USING btree ("updated_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "support_cases_incident_idx" ON "support_cases" USING btree ("incident_id") WHERE "support_cases"."incident_id" is not null;--> statement-breakpoint
CREATE INDEX "support_drafts_case_idx" ON "support_drafts" USING btree ("case_id","created_at");--> statement-breakpoint
CREATE INDEX "support_evidence_case_idx" ON "support_evidence" USING btree ("case_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "support_evidence_job_ref_key" ON "support_evidence" USING btree ("job_id","ref");--> statement-breakpoint
CREATE UNIQUE INDEX "support_incidents_open_signature_key" ON "support_incidents" USING btree ("public_model","error_code") WHERE "support_incidents"."status" <> 'resolved';--> statement-breakpoint
CREATE INDEX "support_incidents_updated_idx" ON "support_incidents" USING btree ("updated_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "support_jobs_queued_idx" ON "support_jobs" USING btree ("available_at","created_at") WHERE "support_jobs"."status" = 'queued';--> statement-breakpoint
CREATE INDEX "support_jobs_leased_idx" ON "support_jobs" USING btree ("lease_expires_at") WHERE "support_jobs"."status" = 'leased';--> statement-breakpoint
CREATE INDEX "support_jobs_case_idx" ON "support_jobs" USING btree ("case_id","created_at");--> statement-breakpoint
CREATE INDEX "support_messages_case_idx" ON "support_messages" USING btree ("case_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "support_messages_source_key" ON "support_messages" USING btree ("case_id","source_message_id") WHERE "support_messages"."source_message_id" is not null;--> statement-breakpoint
CREATE INDEX "request_logs_server_errors_idx" ON "request_logs" USING btree ("created_at","public_model","error_code") WHERE "request_logs"."status" >= 500;