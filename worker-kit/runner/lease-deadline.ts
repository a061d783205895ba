// When a leased job's time is up, on the worker's own clock. The gateway judges expiry by its database's clock, which
// may run ahead of or behind the worker's; `lease_expires_at` read on the worker's clock is therefore only trusted when
// it is the earlier bound. The other bound needs no clock agreement: the lease cannot end later than `lease_seconds`
// after the claim was sent, measured locally.

export interface LeaseTimes {
  /** When the gateway ends the lease, as near as the worker can tell (ms since the epoch, worker's clock). */
  expiresAt: number;
  /** When the runner stops waiting for the task: `expiresAt` minus the safety margin, left for failing or completing. */
  taskDeadline: number;
}

export function leaseTimes(input: {
  /** The job's `lease_expires_at` as the gateway sent it. */
  leaseExpiresAt: string;
  /** The worker's clock just before the claim was sent. */
  claimSentAt: number;
  leaseSeconds: number;
  safetyMarginMs: number;
}): LeaseTimes {
  const local = input.claimSentAt + input.leaseSeconds * 1000;
  const remote = Date.parse(input.leaseExpiresAt);
  const expiresAt = Number.isNaN(remote) ? local : Math.min(local, remote);
  return { expiresAt, taskDeadline: expiresAt - input.safetyMarginMs };
}
