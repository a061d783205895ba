import { sql } from "drizzle-orm";
import { check, customType, index, integer, pgTable, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { users } from "../auth/schema.js";

const bytea = customType<{ data: Buffer }>({ dataType: () => "bytea" });

// The embed route's image cache (docs/api.md, "Embeddable images"), shared by every gateway process. One row per
// user and normalised request; a row without `bytes` is a claim: one process is generating that image and the
// others wait for it until `expires_at` (then any of them may claim it again). Total `size_bytes` stays under
// media.embed.cache_max_bytes: each insert evicts expired rows, then the least recently used (media-cache.ts).
export const mediaCache = pgTable(
  "media_cache",
  {
    // sha-256 (hex) of the user, the model and the normalised parameters: never the prompt itself.
    keyHash: text("key_hash").primaryKey(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    model: text("model").notNull(),
    contentType: text("content_type"),
    etag: text("etag"),
    bytes: bytea("bytes"),
    sizeBytes: integer("size_bytes").notNull().default(0),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    lastUsedAt: timestamp("last_used_at", { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  },
  (t) => [index("media_cache_last_used_idx").on(t.lastUsedAt), check("media_cache_size_nonnegative", sql`${t.sizeBytes} >= 0`)],
);
