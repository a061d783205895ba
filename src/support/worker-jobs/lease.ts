import { errors } from "../../errors.js";
import type { LockedJob } from "./lease-sql.js";
import { leaseTokenMatches } from "./lease-token.js";

/**
 * Checks a worker's lease token against the locked job: another token (a foreign one, or one whose job was
 * claimed again since) is 409 `lease_lost`. Returns whether this token's lease still runs; an ended one
 * (expired, or given up by a failure) is for the caller to refuse with leaseEnded, unless it answers a repeat.
 */
export function checkLeaseToken(job: LockedJob, token: string): "live" | "ended" {
  if (!leaseTokenMatches(job.lease_token_hash, token)) {
    throw errors.conflict("This lease token is not the job's current lease (another worker holds it, or it never did).", "lease_lost");
  }
  return job.status === "leased" && job.lease_live ? "live" : "ended";
}

export const leaseEnded = () =>
  errors.conflict("This lease has ended (it expired, or the job was failed under it): claim again.", "lease_expired");
