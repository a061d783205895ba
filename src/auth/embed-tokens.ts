import { isUuid } from "../ids.js";
import { hkdfSync } from "node:crypto";
import { jwtVerify, SignJWT } from "jose";
import type { RequestRead } from "../db/faults.js";
import type { Pool } from "../db/pool.js";
import { extended } from "../objects.js";
import { keyLookup, toKeyPrincipal, type KeyRow } from "./key-principal.js";
import type { ApiKeyPrincipal, EmbedGrant } from "./principals.js";

// Embed tokens (docs/api.md, "Embeddable images"): what a page puts in `<img src>` instead of a key (spec General
// rule 5). A short-lived HS256 JWT naming the key it was minted with, the model and, when the minter asked, the
// one request it may make. Its signing key is derived (HKDF) from the session secret, so every process sharing
// the database accepts every other's tokens and no second secret needs configuring; a session token is not an
// embed token (another key and audience). The key is looked up by id on every use: revoking it ends its tokens.

const ISSUER = "gateway";
const AUDIENCE = "gateway-embed";
const ALGORITHM = "HS256";
const HKDF_INFO = "gateway embed tokens v1";

export interface MintedEmbedToken {
  token: string;
  expiresAt: Date;
}

export interface EmbedTokens {
  mint(keyId: string, grant: EmbedGrant, expiresAt: Date): Promise<MintedEmbedToken>;
  /** The live key and what the token grants; null for a bad signature, an expired token or a revoked key. */
  verify(token: string): Promise<{ key: ApiKeyPrincipal; grant: EmbedGrant } | null>;
}

const LOOKUP = keyLookup("auth_api_key_by_id", "id");

/** The embed tokens' signing key: 32 bytes derived from the session secret. */
export const embedSigningKey = (sessionSecret: Uint8Array): Uint8Array =>
  new Uint8Array(hkdfSync("sha256", sessionSecret, new Uint8Array(0), HKDF_INFO, 32));

export function createEmbedTokens(opts: { pool: Pool; sessionSecret: Uint8Array; read: RequestRead }): EmbedTokens {
  const key = embedSigningKey(opts.sessionSecret);
  const { pool, read } = opts;

  async function mint(keyId: string, grant: EmbedGrant, expiresAt: Date): Promise<MintedEmbedToken> {
    const claims: Record<string, string> = { model: grant.model };
    if (grant.params !== null) claims.params = grant.params;
    const exp = Math.floor(expiresAt.getTime() / 1000);
    const token = await new SignJWT(claims)
      .setProtectedHeader({ alg: ALGORITHM })
      .setSubject(keyId)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setExpirationTime(exp)
      .sign(key);
    return { token, expiresAt: new Date(exp * 1000) };
  }

  async function verify(token: string) {
    let payload;
    try {
      ({ payload } = await jwtVerify(token, key, { issuer: ISSUER, audience: AUDIENCE, algorithms: [ALGORITHM], requiredClaims: ["exp"] }));
    } catch {
      return null;
    }
    const { sub, model, params } = payload;
    if (typeof sub !== "string" || !isUuid(sub) || typeof model !== "string") return null;
    if (params !== undefined && typeof params !== "string") return null;
    const { rows } = await read(() => pool.query<KeyRow>(extended(LOOKUP, { values: [sub] })));
    const row = rows[0];
    if (!row) return null;
    return { key: toKeyPrincipal(row), grant: { model, params: params ?? null } };
  }

  return { mint, verify };
}
