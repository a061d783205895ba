import { createHash } from "node:crypto";
import { and, eq } from "drizzle-orm";
import type { NodePgDatabase } from "drizzle-orm/node-postgres";
import type { Config } from "../config/schema.js";
import { errors } from "../errors.js";
import { normaliseEmail } from "./email.js";
import { countLoginAttempt } from "./login-attempts.js";
import type { PasswordHasher } from "./passwords.js";
import { loginAttempts, sessions, users } from "./schema.js";
import { signSessionToken } from "./session-token.js";
import type { LoginResult } from "./types.js";
import { toPublicUser } from "./users.js";

export interface LoginDeps {
  db: NodePgDatabase;
  config: Config;
  /** Signs the new session's token. */
  secret: Uint8Array;
  hasher: PasswordHasher;
  csrfTokenFor(sessionId: string): string;
}

/** Login by email and password: a new session row and its signed token. */
export function createLogin({
  db,
  config,
  secret,
  hasher,
  csrfTokenFor,
}: LoginDeps): (email: string, password: string) => Promise<LoginResult> {
  const ttlSeconds = config.auth.session_ttl_seconds;
  const limits = { maxAttempts: config.auth.login_max_attempts, windowSeconds: config.auth.login_window_seconds };
  // Verified against when the email is unknown, so the response time does not reveal which emails exist.
  let dummyHash: Promise<string> | undefined;

  return async function login(email: string, password: string): Promise<LoginResult> {
    // One normal form for the counter and the lookup: an address cannot be locked under one spelling and
    // still log in under another.
    const normalised = normaliseEmail(email);
    const emailKey = createHash("sha256").update(normalised).digest("hex");
    await countLoginAttempt(db, emailKey, limits);
    const [user] = await db.select().from(users).where(eq(users.email, normalised)).limit(1);
    if (!user) {
      dummyHash ??= hasher.hash("dummy password for unknown emails");
      await hasher.verify(password, await dummyHash);
      throw errors.invalidCredentials();
    }
    if (!(await hasher.verify(password, user.passwordHash))) throw errors.invalidCredentials();
    // Said only to whoever knows the password: a guesser learns nothing about which accounts are disabled.
    if (user.disabledAt) throw errors.forbidden("This account is disabled; ask the gateway's operator.", "account_disabled");
    // The only moment the password is known: a hash made with older parameters is replaced by a current one.
    // Conditional on the old hash, so a password changed meanwhile is not overwritten.
    if (hasher.outdated(user.passwordHash)) {
      const rehashed = await hasher.hash(password);
      await db
        .update(users)
        .set({ passwordHash: rehashed })
        .where(and(eq(users.id, user.id), eq(users.passwordHash, user.passwordHash)));
    }
    // The owner is in: earlier failures no longer count against the address.
    await db.delete(loginAttempts).where(eq(loginAttempts.emailHash, emailKey));

    const issuedAt = Math.floor(Date.now() / 1000);
    const expiresAt = new Date((issuedAt + ttlSeconds) * 1000);
    const [session] = await db.insert(sessions).values({ userId: user.id, expiresAt }).returning({ id: sessions.id });
    const sid = session!.id;
    const token = await signSessionToken({ sessionId: sid, userId: user.id, role: user.role, issuedAt, expiresAt }, secret);
    return { token, csrf_token: csrfTokenFor(sid), expires_at: expiresAt.toISOString(), user: toPublicUser(user) };
  };
}
