import type { Listener } from "../db/listener.js";

// Never a 429 while the account has room (docs/billing.md, "Escrow"). A lease whose sync cannot cover a request
// asks the other processes, through NOTIFY, to give back what they hold leased and unused on that account, waits
// for them (milliseconds), and syncs again before it refuses: a refusal then means that all processes together
// cannot cover the request (what they hold for requests in flight stays held).

export const QUOTA_CHANNEL = "gateway_quota";

/** How long a lease waits for another process's give-back before it refuses anyway. */
export const GIVE_BACK_WAIT_MS = 250;
/** After the first answer that gave something back, how long a lease waits for others' before it syncs again. */
const MORE_ANSWERS_MS = 5;

export interface GiveBack {
  /** Asks the other processes to give back their unused units on `accountId`; resolves once one has (or soon after). */
  ask(accountId: string): Promise<void>;
  stop(): void;
}

/**
 * `give(accountId)` gives back this process's unused units on the account (resolving, once committed, with how
 * many); `selfId()` is this process's instance id, so that it does not answer itself.
 */
export function createGiveBack(
  listener: Listener | undefined,
  selfId: () => string,
  give: (accountId: string) => Promise<bigint>,
): GiveBack {
  const waiting = new Map<string, Set<() => void>>();
  let stopped = false;
  listener?.on(QUOTA_CHANNEL, (payload) => {
    const [verb, accountId, arg] = payload.split(":");
    if (!accountId) return;
    if (verb === "ask" && arg !== selfId() && !stopped) {
      void give(accountId).then(
        (given) => listener.notify(QUOTA_CHANNEL, `gave:${accountId}:${given}`),
        // The asking process refuses after its wait anyway; a give-back that failed is retried by its lease.
        () => {},
      );
    } else if (verb === "gave" && arg !== "0") {
      for (const wake of waiting.get(accountId) ?? []) wake();
    }
  });
  return {
    ask(accountId) {
      if (!listener?.listening() || stopped) return Promise.resolve();
      return new Promise<void>((resolve) => {
        let timer: NodeJS.Timeout;
        const done = () => {
          clearTimeout(timer);
          const wakes = waiting.get(accountId);
          wakes?.delete(wake);
          if (wakes?.size === 0) waiting.delete(accountId);
          resolve();
        };
        const wake = () => {
          clearTimeout(timer);
          timer = setTimeout(done, MORE_ANSWERS_MS);
        };
        timer = setTimeout(done, GIVE_BACK_WAIT_MS);
        let wakes = waiting.get(accountId);
        if (!wakes) waiting.set(accountId, (wakes = new Set()));
        wakes.add(wake);
        listener.notify(QUOTA_CHANNEL, `ask:${accountId}:${selfId()}`).catch(done);
      });
    },
    stop() {
      stopped = true;
    },
  };
}
