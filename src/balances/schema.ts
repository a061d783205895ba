import { sql } from "drizzle-orm";
import { check, index, pgTable, primaryKey, smallint, text, timestamp, uuid } from "drizzle-orm/pg-core";
import { users } from "../auth/schema.js";

// The idempotency keys of the calls that move money or quota (docs/billing.md, "Idempotency of money calls"): a
// reseller credit, a reset grant, a manual reset use. The row is written in the transaction of the operation it
// names (idempotency.ts), with the answer that operation gave, so the key and its effect commit together or not at
// all, and a retry answers the first answer exactly.
export const idempotencyKeys = pgTable(
  "idempotency_keys",
  {
    // reseller_credit, reset_grant or reset_use.
    operation: text("operation").notNull(),
    // Whose money or quota the operation moves (the credited or granted user, the user using a reset): the key's scope.
    ownerId: uuid("owner_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    key: text("key").notNull(),
    // A digest of what was asked (the normalised body): the same key with another body is idempotency_key_reused.
    fingerprint: text("fingerprint").notNull(),
    // The call (one HTTP request or one command, with its internal retries) that wrote the answer: any other call
    // with this key is a replay.
    callId: uuid("call_id").notNull(),
    // Null only inside the claiming transaction, which fills them in before it commits.
    status: smallint("status"),
    // The answer's JSON text as first sent: the body on success, `{code, message, param}` for a refusal.
    answer: text("answer"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: "idempotency_keys_pkey", columns: [t.operation, t.ownerId, t.key] }),
    index("idempotency_keys_created_at_idx").on(t.createdAt),
    index("idempotency_keys_owner_id_idx").on(t.ownerId),
    check("idempotency_keys_answered", sql`(${t.status} is null) = (${t.answer} is null)`),
  ],
);
