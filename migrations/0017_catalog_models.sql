CREATE TABLE "catalog_models" (
	"model_id" text PRIMARY KEY NOT NULL,
	"first_seen_at" timestamp with time zone NOT NULL
);
