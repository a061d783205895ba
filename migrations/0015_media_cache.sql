CREATE TABLE "media_cache" (
	"key_hash" text PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"model" text NOT NULL,
	"content_type" text,
	"etag" text,
	"bytes" "bytea",
	"size_bytes" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "media_cache_size_nonnegative" CHECK ("media_cache"."size_bytes" >= 0)
);
--> statement-breakpoint
ALTER TABLE "media_cache" ADD CONSTRAINT "media_cache_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "media_cache_last_used_idx" ON "media_cache" USING btree ("last_used_at");