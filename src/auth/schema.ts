import { boolean, index, integer, pgTable, text, timestamp, uniqueIndex, uuid } from "drizzle-orm/pg-core";

export const users = pgTable(
  "users",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    // Always in the form of normaliseEmail (email.ts), so lookups are plain equality on the unique index.
    email: text("email").notNull(),
    passwordHash: text("password_hash").notNull(),
    role: text("role", { enum: ["user", "admin"] })
      .notNull()
      .default("user"),
    plan: text("plan").notNull(),
    // Raised by every plan change: the revision of the user's side of the ledger's base credits (a key cache that
    // missed the change states an older one, which never overwrites the newer: src/quota/account-kinds.ts).
    planRevision: integer("plan_revision").notNull().default(0),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    // Set by `gateway users disable`: the user cannot log in, and their sessions and keys are refused.
    disabledAt: timestamp("disabled_at", { withTimezone: true }),
    // PUT /api/v1/user/quota-resets: a setting of the user, so it outlives every daily and weekly renewal.
    autoResetEnabled: boolean("auto_reset_enabled").notNull().default(false),
    // PATCH /api/v1/user/token-transfers/preferences: refuses transfers to this user.
    transfersReceiveDisabled: boolean("transfers_receive_disabled").notNull().default(false),
  },
  (t) => [uniqueIndex("users_email_key").on(t.email)],
);

export const apiKeys = pgTable(
  "api_keys",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    name: text("name").notNull().default(""),
    kind: text("kind", { enum: ["inference", "reseller"] })
      .notNull()
      .default("inference"),
    // sha256 of the full secret, hex. Keys carry 256 bits of entropy, so a fast hash is enough and keeps the
    // per-request lookup cheap; the secret itself is never stored.
    secretHash: text("secret_hash").notNull(),
    prefix: text("prefix").notNull(),
    // Public model IDs the key is restricted to; null = every model the user's plan allows.
    models: text("models").array(),
    // A pricing group of the config; its multiplier applies to every quota charge made with the key.
    pricingGroup: text("pricing_group").notNull().default("default"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
    lastUsedAt: timestamp("last_used_at", { withTimezone: true }),
  },
  (t) => [uniqueIndex("api_keys_secret_hash_key").on(t.secretHash), index("api_keys_user_id_idx").on(t.userId)],
);

export const sessions = pgTable(
  "sessions",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    userId: uuid("user_id")
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
  },
  (t) => [index("sessions_expires_at_idx").on(t.expiresAt)],
);

// Login attempts per email address in the current window (docs/auth.md, "Login throttling"). Keyed by a hash of
// the normalised address, so attempts on unknown addresses are counted without storing what was typed.
export const loginAttempts = pgTable("login_attempts", {
  emailHash: text("email_hash").primaryKey(),
  attempts: integer("attempts").notNull(),
  windowStartedAt: timestamp("window_started_at", { withTimezone: true }).notNull(),
});

// Secrets the gateway generates for itself (the session signing key). Kept in the database, not in one
// process's data dir, so every `gateway serve` sharing the database signs and verifies sessions alike.
export const gatewaySecrets = pgTable("gateway_secrets", {
  name: text("name").primaryKey(),
  value: text("value").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});
