import { pgTable, text, timestamp } from "drizzle-orm/pg-core";

// When each public model ID first appeared in a loaded config: the `created` of the model lists, so it stays
// the same across restarts and processes. Written once per model when a serving process loads its config
// (src/catalog/first-seen.ts), never per request; a row outlives its model leaving the config, so a model that
// comes back keeps its first date.
export const catalogModels = pgTable("catalog_models", {
  modelId: text("model_id").primaryKey(),
  firstSeenAt: timestamp("first_seen_at", { withTimezone: true }).notNull(),
});
