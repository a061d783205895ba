import { randomUUID } from "node:crypto";
import type { Listener } from "../db/listener.js";

// Never a 429 while the account has room (docs/billing.md, "Escrow"). A lease whose sync cannot cover a request
// asks the other processes holding a lease on the account, through NOTIFY, to give back what they hold leased and
// unused there; each answers once its give-back is committed (with what it gave, 0 included), and the lease syncs
// again once every one has answered, before it refuses: a refusal then means that all processes together cannot
// cover the request (what they hold for requests in flight stays held). The sync that fell short counted them, so
// an account no other process holds a lease on is refused at once.

export const QUOTA_CHANNEL = "gateway_quota";

/**
 * How long a lease waits for the other processes' answers before it refuses anyway: a process that stopped
 * answering (its leases expire) must not hold every refusal for long; a live one answers within a sync. Never more
 * than the caller allows (`maxWaitMs`: what leaves the request time for its next sync before its deadline).
 */
const GIVE_BACK_WAIT_MS = 1_000;

export interface GiveBack {
  /** Asks the `others` processes with a lease on `accountId` to give back their unused units; resolves once all answered (or after the wait). */
  ask(accountId: string, others: number, maxWaitMs: number): Promise<void>;
  stop(): void;
}

/**
 * `give(accountId)` gives back this process's unused units on the account, resolving once committed with how many
 * (null: it holds no lease there, and does not answer); `selfId()` is this process's instance id, so that it does
 * not answer itself.
 */
export function createGiveBack(
  listener: Listener | undefined,
  selfId: () => string,
  give: (accountId: string) => Promise<bigint | null>,
): GiveBack {
  /** The asks waiting for answers, by their id: one call per answer. */
  const waiting = new Map<string, () => void>();
  let stopped = false;
  listener?.on(QUOTA_CHANNEL, (payload) => {
    const [verb, accountId, askId, arg] = payload.split(":");
    if (!accountId || !askId) return;
    if (verb === "ask" && arg !== selfId() && !stopped) {
      // The asking process refuses after its wait anyway: a give-back that failed is retried by its lease, and an
      // answer that a fault kept from being sent is not worth a retry (nor, unhandled, the process).
      void give(accountId)
        .then((given) => (given === null ? undefined : listener.notify(QUOTA_CHANNEL, `gave:${accountId}:${askId}:${given}`)))
        .catch(() => {});
    } else if (verb === "gave") {
      waiting.get(askId)?.();
    }
  });
  return {
    ask(accountId, others, maxWaitMs) {
      if (others <= 0 || !listener?.listening() || stopped) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const askId = randomUUID();
        let answers = 0;
        const done = () => {
          clearTimeout(timer);
          waiting.delete(askId);
          resolve();
        };
        const timer = setTimeout(done, Math.max(0, Math.min(GIVE_BACK_WAIT_MS, maxWaitMs)));
        waiting.set(askId, () => {
          if (++answers >= others) done();
        });
        listener.notify(QUOTA_CHANNEL, `ask:${accountId}:${askId}:${selfId()}`).catch(done);
      });
    },
    stop() {
      stopped = true;
    },
  };
}
