import { hash, randomBytes } from "node:crypto";

// Keys are `gw_` + base64url(32 random bytes) without padding: 43 chars, 256 bits of entropy. The `gw_`
// marker lets secret scanners and the session middleware recognise a key at a glance.
const MARKER = "gw_";
const SECRET_BYTES = 32;
const BODY_LENGTH = 43;
const PREFIX_LENGTH = 12;
const FORMAT = /^gw_[A-Za-z0-9_-]{43}$/;

export const API_KEY_LENGTH = MARKER.length + BODY_LENGTH;

export interface GeneratedApiKey {
  key: string;
  prefix: string;
  hash: string;
}

export function generateApiKey(): GeneratedApiKey {
  const key = MARKER + randomBytes(SECRET_BYTES).toString("base64url");
  return { key, prefix: apiKeyPrefix(key), hash: hashApiKey(key) };
}

/** What admins see to tell keys apart (`gw_AbCdEfGhI`); 9 random chars identify without revealing. */
export function apiKeyPrefix(key: string): string {
  return key.slice(0, PREFIX_LENGTH);
}

/** sha256 hex: the secret has full entropy, so no salt or slow hash is needed and lookups stay cheap. */
export function hashApiKey(secret: string): string {
  return hash("sha256", secret, "hex");
}

/** Cheap syntactic check run before any hashing or lookup, so garbage never reaches the database. */
export function looksLikeApiKey(value: string): boolean {
  return value.length === API_KEY_LENGTH && FORMAT.test(value);
}
