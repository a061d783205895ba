import { createHash } from "node:crypto";

// The automatic reserve reset (docs/billing.md, "Automatic resets"): when fewer than this many of the day's units
// remain, the next request that may use a reset uses one and proceeds on the restored allowance.
export const AUTO_RESET_THRESHOLD = 100n;

/**
 * The id of the automatic use a lease tries before admitting the waiters of its sync `seq`: a UUID derived from
 * both, so that the attempt retried after a lost reply is the same use and never posts a second reset.
 */
export function autoResetUseId(leaseId: string, seq: number): string {
  const hex = createHash("sha256").update(`auto-reset:${leaseId}:${seq}`).digest("hex");
  // Shaped as a version-8 (custom) UUID, RFC 9562.
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
