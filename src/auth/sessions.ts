import { createHash, createHmac } from "node:crypto";
import { and, eq, isNull, lt, or, sql } from "drizzle-orm";
import type { NodePgDatabase } from "drizzle-orm/node-postgres";
import { jwtVerify, SignJWT } from "jose";
import type { Config } from "../config/schema.js";
import type { RequestRead } from "../db/faults.js";
import { GatewayError, errors } from "../errors.js";
import type { SessionPrincipal } from "./principals.js";
import { normaliseEmail } from "./email.js";
import type { PasswordHasher } from "./passwords.js";
import { loginAttempts, sessions, users } from "./schema.js";
import type { LoginResult, SessionService } from "./types.js";
import { isUuid } from "../ids.js";
import { safeEqual } from "../server/bearer.js";
import { toPublicUser } from "./users.js";

const ISSUER = "gateway";
const AUDIENCE = "gateway-session";
const ALGORITHM = "HS256";

export interface SessionServiceOptions {
  db: NodePgDatabase;
  config: Config;
  secret: Uint8Array;
  /** The secret before a rotation: verifies (never signs) the sessions it signed. */
  previousSecret: Uint8Array | null;
  hasher: PasswordHasher;
  /** The session lookup of every user and admin request: retried on a dead connection, under the request's deadline. */
  read: RequestRead;
}

/**
 * Sessions are a signed JWT naming a row in `sessions`. The signature keeps forged tokens away from the
 * database; the row makes logout and revocation immediate and supplies role and plan fresh on every request.
 */
export function createSessionService({ db, config, secret, previousSecret, hasher, read }: SessionServiceOptions): SessionService {
  const verifyOptions = { issuer: ISSUER, audience: AUDIENCE, algorithms: [ALGORITHM] };
  const verifiers = previousSecret ? [secret, previousSecret] : [secret];
  const ttlSeconds = config.auth.session_ttl_seconds;
  // Verified against when the email is unknown, so the response time does not reveal which emails exist.
  let dummyHash: Promise<string> | undefined;

  const maxAttempts = config.auth.login_max_attempts;
  const windowSeconds = config.auth.login_window_seconds;

  /**
   * Counts an attempt for the address before its password is checked, in one statement, so processes sharing
   * the database together never check more than `maxAttempts` passwords per address and window; beyond that
   * the attempt is refused without the scrypt work. Unknown addresses are counted alike, so a 429 does not tell
   * which addresses exist.
   */
  async function countAttempt(emailKey: string): Promise<void> {
    const { rows } = await db.execute<{ attempts: number; retry_after: number }>(sql`
      insert into login_attempts as a (email_hash, attempts, window_started_at) values (${emailKey}, 1, now())
      on conflict (email_hash) do update set
        attempts = case when a.window_started_at <= now() - make_interval(secs => ${windowSeconds}) then 1 else a.attempts + 1 end,
        window_started_at = case when a.window_started_at <= now() - make_interval(secs => ${windowSeconds}) then now() else a.window_started_at end
      returning attempts, ceil(extract(epoch from a.window_started_at + make_interval(secs => ${windowSeconds}) - now()))::int as retry_after`);
    const row = rows[0]!;
    if (row.attempts <= maxAttempts) return;
    const seconds = Math.max(1, row.retry_after);
    throw new GatewayError({
      message: `Too many login attempts for this email address; try again in ${seconds} seconds.`,
      code: "login_rate_limited",
      headers: { "Retry-After": String(seconds) },
    });
  }

  async function login(email: string, password: string): Promise<LoginResult> {
    // One normal form for the counter and the lookup: an address cannot be locked under one spelling and
    // still log in under another.
    const normalised = normaliseEmail(email);
    const emailKey = createHash("sha256").update(normalised).digest("hex");
    await countAttempt(emailKey);
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
    const token = await new SignJWT({ sid, role: user.role })
      .setProtectedHeader({ alg: ALGORITHM, typ: "JWT" })
      .setSubject(user.id)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(issuedAt)
      .setExpirationTime(Math.floor(expiresAt.getTime() / 1000))
      .sign(secret);
    return { token, csrf_token: csrfTokenFor(sid), expires_at: expiresAt.toISOString(), user: toPublicUser(user) };
  }

  async function verify(token: string): Promise<SessionPrincipal | null> {
    let sid: unknown;
    let sub: unknown;
    for (const key of verifiers) {
      try {
        const { payload } = await jwtVerify(token, key, verifyOptions);
        sid = payload.sid;
        sub = payload.sub;
        break;
      } catch {
        // not signed with this key (or expired, or malformed): the next key, else refused below
      }
    }
    if (typeof sid !== "string" || typeof sub !== "string" || !isUuid(sid) || !isUuid(sub)) return null;
    const [row] = await read(async () =>
      db
        .select({ expiresAt: sessions.expiresAt, email: users.email, role: users.role, plan: users.plan, planRevision: users.planRevision })
        .from(sessions)
        .innerJoin(users, eq(users.id, sessions.userId))
        .where(
          and(
            eq(sessions.id, sid),
            eq(sessions.userId, sub),
            isNull(sessions.revokedAt),
            isNull(users.disabledAt),
            sql`${sessions.expiresAt} > now()`,
          ),
        )
        .limit(1),
    );
    if (!row) return null;
    return {
      sessionId: sid,
      userId: sub,
      email: row.email,
      role: row.role,
      plan: row.plan,
      planRevision: row.planRevision,
      expiresAt: row.expiresAt,
    };
  }

  async function logout(sessionId: string): Promise<void> {
    if (!isUuid(sessionId)) return;
    await db
      .update(sessions)
      .set({ revokedAt: sql`coalesce(${sessions.revokedAt}, now())` })
      .where(eq(sessions.id, sessionId));
  }

  /** Stateless and bound to the session: an attacker without the session cannot compute it. */
  function csrfTokenFor(sessionId: string, key: Uint8Array = secret): string {
    return createHmac("sha256", key).update(`csrf:${sessionId}`).digest("base64url");
  }

  /** A session signed before a rotation got its CSRF token from the previous secret. */
  function csrfMatches(sessionId: string, given: string): boolean {
    for (const key of verifiers) if (safeEqual(given, csrfTokenFor(sessionId, key))) return true;
    return false;
  }

  async function pruneExpired(before: Date): Promise<number> {
    const result = await db.delete(sessions).where(or(lt(sessions.expiresAt, before), lt(sessions.revokedAt, before)));
    return result.rowCount ?? 0;
  }

  async function pruneLoginAttempts(before: Date): Promise<number> {
    const result = await db
      .delete(loginAttempts)
      .where(sql`${loginAttempts.windowStartedAt} < ${before.toISOString()}::timestamptz - make_interval(secs => ${windowSeconds})`);
    return result.rowCount ?? 0;
  }

  return { login, verify, logout, csrfTokenFor: (sessionId) => csrfTokenFor(sessionId), csrfMatches, pruneExpired, pruneLoginAttempts };
}
