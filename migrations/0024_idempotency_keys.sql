CREATE TABLE "idempotency_keys" (
	"operation" text NOT NULL,
	"owner_id" uuid NOT NULL,
	"key" text NOT NULL,
	"fingerprint" text NOT NULL,
	"call_id" uuid NOT NULL,
	"status" smallint,
	"answer" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "idempotency_keys_pkey" PRIMARY KEY("operation","owner_id","key"),
	CONSTRAINT "idempotency_keys_answered" CHECK (("idempotency_keys"."status" is null) = ("idempotency_keys"."answer" is null))
);
--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD CONSTRAINT "idempotency_keys_owner_id_users_id_fk" FOREIGN KEY ("owner_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "idempotency_keys_created_at_idx" ON "idempotency_keys" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "idempotency_keys_owner_id_idx" ON "idempotency_keys" USING btree ("owner_id");