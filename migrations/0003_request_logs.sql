CREATE TABLE "request_logs" (
	"request_id" text PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"key_id" uuid,
	"route" text NOT NULL,
	"client_protocol" text NOT NULL,
	"public_model" text NOT NULL,
	"upstream_model" text,
	"provider" text,
	"fallback_path" text[] NOT NULL,
	"status" smallint NOT NULL,
	"error_class" text,
	"input_tokens" integer NOT NULL,
	"output_tokens" integer NOT NULL,
	"cached_tokens" integer NOT NULL,
	"quota_charged" bigint NOT NULL,
	"usage_source" text NOT NULL,
	"latency_ms" numeric(12, 3) NOT NULL,
	"ttfb_ms" numeric(12, 3),
	"streamed" boolean NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "request_logs_quota_charged_range" CHECK ("request_logs"."quota_charged" between 0 and 9007199254740991)
);
--> statement-breakpoint
CREATE INDEX "request_logs_user_created_idx" ON "request_logs" USING btree ("user_id","created_at" DESC NULLS FIRST,"request_id" DESC NULLS FIRST);