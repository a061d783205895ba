import { createHash, timingSafeEqual } from "node:crypto";

// Bearer credentials and constant-time comparison of secrets, for every surface that checks one (API keys,
// sessions, the bot token, the metrics token).

const BEARER = /^bearer +(\S+) *$/i;

/** The credential of `Authorization: Bearer <credential>`; null when absent or in another scheme. */
export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  return BEARER.exec(header)?.[1] ?? null;
}

const sha256 = (value: string) => createHash("sha256").update(value).digest();

/** Constant-time whatever the lengths: digests are compared, so not even the expected length leaks. */
export function safeEqual(given: string, expected: string): boolean {
  return timingSafeEqual(sha256(given), sha256(expected));
}

/** The check of one fixed secret (its digest made once): constant-time, false without a credential. */
export function secretCheck(secret: string): (given: string | null) => boolean {
  const expected = sha256(secret);
  return (given) => given !== null && timingSafeEqual(sha256(given), expected);
}
