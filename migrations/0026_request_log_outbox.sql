CREATE TABLE "request_log_outbox" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"record" json NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "request_log_outbox_kind" CHECK ("request_log_outbox"."kind" in ('insert', 'rewrite'))
);
--> statement-breakpoint
CREATE TABLE "request_log_outbox_quarantine" (
	"id" bigint PRIMARY KEY NOT NULL,
	"kind" text NOT NULL,
	"record" json NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	"quarantined_at" timestamp with time zone DEFAULT now() NOT NULL,
	"error_code" text NOT NULL
);
