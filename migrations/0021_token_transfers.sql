CREATE TABLE "token_transfer_policy" (
	"id" smallint PRIMARY KEY NOT NULL,
	"revision" integer NOT NULL,
	"enabled" boolean NOT NULL,
	"min_amount" bigint NOT NULL,
	"send_daily_limit" bigint NOT NULL,
	"receive_daily_limit" bigint NOT NULL,
	"service_daily_limit" bigint NOT NULL,
	"updated_by" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "token_transfer_policy_one_row" CHECK ("token_transfer_policy"."id" = 1)
);
--> statement-breakpoint
CREATE TABLE "token_transfer_previews" (
	"user_id" uuid NOT NULL,
	"window_start" timestamp with time zone NOT NULL,
	"count" integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE "token_transfers" (
	"id" uuid PRIMARY KEY NOT NULL,
	"sender_id" uuid NOT NULL,
	"recipient_id" uuid NOT NULL,
	"idempotency_key" text NOT NULL,
	"amount" bigint NOT NULL,
	"day" text NOT NULL,
	"status" text NOT NULL,
	"reason" text,
	"applied" bigint,
	"returned" bigint,
	"hold_id" uuid NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone,
	CONSTRAINT "token_transfers_amount_positive" CHECK ("token_transfers"."amount" > 0)
);
--> statement-breakpoint
ALTER TABLE "users" ADD COLUMN "transfers_receive_disabled" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "token_transfer_previews" ADD CONSTRAINT "token_transfer_previews_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "token_transfers" ADD CONSTRAINT "token_transfers_sender_id_users_id_fk" FOREIGN KEY ("sender_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "token_transfers" ADD CONSTRAINT "token_transfers_recipient_id_users_id_fk" FOREIGN KEY ("recipient_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "token_transfer_previews_key" ON "token_transfer_previews" USING btree ("user_id","window_start");--> statement-breakpoint
CREATE UNIQUE INDEX "token_transfers_sender_key" ON "token_transfers" USING btree ("sender_id","idempotency_key");--> statement-breakpoint
CREATE INDEX "token_transfers_sender_idx" ON "token_transfers" USING btree ("sender_id","created_at");--> statement-breakpoint
CREATE INDEX "token_transfers_recipient_idx" ON "token_transfers" USING btree ("recipient_id","created_at");--> statement-breakpoint
CREATE INDEX "token_transfers_day_idx" ON "token_transfers" USING btree ("day","status");