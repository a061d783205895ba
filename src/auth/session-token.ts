import { SignJWT } from "jose";

const ISSUER = "gateway";
const AUDIENCE = "gateway-session";
const ALGORITHM = "HS256";

/** What jwtVerify requires of a session token. */
export const SESSION_TOKEN_CHECKS = { issuer: ISSUER, audience: AUDIENCE, algorithms: [ALGORITHM] };

export interface SessionTokenClaims {
  sessionId: string;
  userId: string;
  role: string;
  /** Seconds since the epoch. */
  issuedAt: number;
  expiresAt: Date;
}

/** The signed JWT naming a row in `sessions`. */
export function signSessionToken(claims: SessionTokenClaims, secret: Uint8Array): Promise<string> {
  return new SignJWT({ sid: claims.sessionId, role: claims.role })
    .setProtectedHeader({ alg: ALGORITHM, typ: "JWT" })
    .setSubject(claims.userId)
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setIssuedAt(claims.issuedAt)
    .setExpirationTime(Math.floor(claims.expiresAt.getTime() / 1000))
    .sign(secret);
}
