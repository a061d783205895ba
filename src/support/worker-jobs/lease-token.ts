import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

// Lease tokens (docs/support.md, "Leases"): a worker holds the token, the job row only its sha-256, so a database
// read never yields a usable lease.

/** A fresh lease token: 32 random bytes, base64url. */
export function newLeaseToken(): string {
  return randomBytes(32).toString("base64url");
}

/** The sha-256 (hex) a job row stores of its lease token. */
export function hashLeaseToken(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** Whether `token` is the lease whose hash is stored, compared in constant time (hashes have one length). */
export function leaseTokenMatches(storedHash: string | null, token: string): boolean {
  if (storedHash === null) return false;
  const stored = Buffer.from(storedHash, "hex");
  const given = createHash("sha256").update(token).digest();
  return stored.length === given.length && timingSafeEqual(stored, given);
}
