// What a shutdown signal means to `gateway serve`: the first drains, a second hurries (cuts open connections,
// still stops PostgreSQL cleanly), a third exits at once. A repeat within `echoMs` of the first is not counted:
// a terminal's Ctrl-C reaches npm and the gateway alike, and npm forwards it once more (docs/cli.md, "serve").

export type ShutdownStep = "drain" | "hurry" | "exit" | "ignore";

/** A second signal this soon after the first is the same Ctrl-C, forwarded by npm. */
export const SIGNAL_ECHO_MS = 500;

export function shutdownSignals(opts: { echoMs?: number; now?: () => number } = {}): () => ShutdownStep {
  const echoMs = opts.echoMs ?? SIGNAL_ECHO_MS;
  const now = opts.now ?? (() => performance.now());
  let signals = 0;
  let firstAt = 0;
  return () => {
    if (signals === 1 && now() - firstAt < echoMs) return "ignore";
    signals += 1;
    if (signals === 1) {
      firstAt = now();
      return "drain";
    }
    return signals === 2 ? "hurry" : "exit";
  };
}
