import { createHmac } from "node:crypto";
import { and, eq, isNull, lt, or, sql } from "drizzle-orm";
import type { NodePgDatabase } from "drizzle-orm/node-postgres";
import { jwtVerify } from "jose";
import type { Config } from "../config/schema.js";
import type { RequestRead } from "../db/faults.js";
import type { SessionPrincipal } from "./principals.js";
import { createLogin } from "./login.js";
import { pruneLoginAttempts } from "./login-attempts.js";
import type { PasswordHasher } from "./passwords.js";
import { sessions, users } from "./schema.js";
import { SESSION_TOKEN_CHECKS } from "./session-token.js";
import type { SessionService } from "./types.js";
import { isUuid } from "../ids.js";
import { safeEqual } from "../server/bearer.js";

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
  const verifiers = previousSecret ? [secret, previousSecret] : [secret];
  const windowSeconds = config.auth.login_window_seconds;

  async function verify(token: string): Promise<SessionPrincipal | null> {
    let sid: unknown;
    let sub: unknown;
    for (const key of verifiers) {
      try {
        const { payload } = await jwtVerify(token, key, SESSION_TOKEN_CHECKS);
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

  return {
    login: createLogin({ db, config, secret, hasher, csrfTokenFor }),
    verify,
    logout,
    csrfTokenFor: (sessionId) => csrfTokenFor(sessionId),
    csrfMatches,
    pruneExpired,
    pruneLoginAttempts: (before) => pruneLoginAttempts(db, before, windowSeconds),
  };
}
