// The lease countdown of a job worked by hand: what is left of the lease, judged against the injected clock, so a
// support engineer sees when to hurry and when the lease is gone (the gateway refuses its token from then on).

/** Under this many seconds left the countdown warns: about the time one more $EDITOR round takes. */
export const LEASE_WARNING_SECONDS = 30;

export type LeaseState = "running" | "ending" | "expired";

export interface LeaseCountdown {
  state: LeaseState;
  /** Whole seconds left, rounded up, so "00:00" only ever shows once the lease is gone. */
  secondsLeft: number;
  text: string;
}

export function formatMinutesSeconds(totalSeconds: number): string {
  const seconds = Math.max(0, Math.floor(totalSeconds));
  const mm = String(Math.floor(seconds / 60)).padStart(2, "0");
  const ss = String(seconds % 60).padStart(2, "0");
  return `${mm}:${ss}`;
}

export function leaseCountdown(leaseExpiresAt: string, nowMs: number): LeaseCountdown {
  const leftMs = Date.parse(leaseExpiresAt) - nowMs;
  if (!(leftMs > 0)) {
    return { state: "expired", secondsLeft: 0, text: "lease gone: the gateway refuses this job's token now; complete is disabled" };
  }
  const secondsLeft = Math.ceil(leftMs / 1000);
  const clock = `lease ${formatMinutesSeconds(secondsLeft)} left`;
  if (secondsLeft < LEASE_WARNING_SECONDS) {
    return { state: "ending", secondsLeft, text: `${clock}: under ${LEASE_WARNING_SECONDS} s, complete or fail it now` };
  }
  return { state: "running", secondsLeft, text: clock };
}
