import { createHmac } from "node:crypto";
import { and, eq, isNull, lt, or, sql } from "drizzle-orm";
import type { NodePgDatabase } from "drizzle-orm/node-postgres";
import { jwtVerify, SignJWT } from "jose";
import type { Config } from "../config/schema.js";
import { errors } from "../errors.js";
import type { SessionPrincipal } from "../server/context.js";
import { hashPassword, verifyPassword } from "./passwords.js";
import { sessions, users } from "./schema.js";
import type { LoginResult, SessionService } from "./types.js";
import { isUuid, toPublicUser } from "./users.js";

const ISSUER = "gateway";
const AUDIENCE = "gateway-session";
const ALGORITHM = "HS256";
const LOGIN_FAILED = "Invalid email or password.";

export interface SessionServiceOptions {
  db: NodePgDatabase;
  config: Config;
  secret: Uint8Array;
}

/**
 * Sessions are a signed JWT naming a row in `sessions`. The signature keeps forged tokens away from the
 * database; the row makes logout and revocation immediate and supplies role and plan fresh on every request.
 */
export function createSessionService({ db, config, secret }: SessionServiceOptions): SessionService {
  const ttlSeconds = config.auth.session_ttl_seconds;
  // Verified against when the email is unknown, so the response time does not reveal which emails exist.
  let dummyHash: Promise<string> | undefined;

  async function login(email: string, password: string): Promise<LoginResult> {
    const [user] = await db
      .select()
      .from(users)
      .where(sql`lower(${users.email}) = lower(${email.trim()})`)
      .limit(1);
    if (!user) {
      dummyHash ??= hashPassword("dummy password for unknown emails");
      await verifyPassword(password, await dummyHash);
      throw errors.invalidSession(LOGIN_FAILED);
    }
    if (!(await verifyPassword(password, user.passwordHash))) throw errors.invalidSession(LOGIN_FAILED);

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
    try {
      const { payload } = await jwtVerify(token, secret, { issuer: ISSUER, audience: AUDIENCE, algorithms: [ALGORITHM] });
      sid = payload.sid;
      sub = payload.sub;
    } catch {
      return null;
    }
    if (typeof sid !== "string" || typeof sub !== "string" || !isUuid(sid) || !isUuid(sub)) return null;
    const [row] = await db
      .select({ expiresAt: sessions.expiresAt, email: users.email, role: users.role, plan: users.plan })
      .from(sessions)
      .innerJoin(users, eq(users.id, sessions.userId))
      .where(
        and(eq(sessions.id, sid), eq(sessions.userId, sub), isNull(sessions.revokedAt), sql`${sessions.expiresAt} > now()`),
      )
      .limit(1);
    if (!row) return null;
    return { sessionId: sid, userId: sub, email: row.email, role: row.role, plan: row.plan, expiresAt: row.expiresAt };
  }

  async function logout(sessionId: string): Promise<void> {
    if (!isUuid(sessionId)) return;
    await db
      .update(sessions)
      .set({ revokedAt: sql`coalesce(${sessions.revokedAt}, now())` })
      .where(eq(sessions.id, sessionId));
  }

  /** Stateless and bound to the session: an attacker without the session cannot compute it. */
  function csrfTokenFor(sessionId: string): string {
    return createHmac("sha256", secret).update(`csrf:${sessionId}`).digest("base64url");
  }

  async function pruneExpired(before: Date): Promise<number> {
    const result = await db.delete(sessions).where(or(lt(sessions.expiresAt, before), lt(sessions.revokedAt, before)));
    return result.rowCount ?? 0;
  }

  return { login, verify, logout, csrfTokenFor, pruneExpired };
}
