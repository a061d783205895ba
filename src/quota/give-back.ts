import { randomUUID } from "node:crypto";
import type { Listener } from "../db/listener.js";

// Never a 429 while the account has room (docs/billing.md, "Escrow"). A lease whose sync cannot cover a request
// asks the other processes holding a lease on the account, through NOTIFY, to give back what they hold leased and
// unused there; each answers once its give-back is committed (on its lease row, taking no lock on the account's:
// lease-sql.ts), with what it gave, 0 included, and the lease syncs again once every one has answered, gathering
// what they gave, before it refuses: a refusal then means that all processes together cannot cover the request
// (what they hold for requests in flight stays held). The sync that fell short counted them, so an account no other
// process holds a lease on is refused at once.
//
// A refusal after such a round is told to the others ("spent", with the refused request's size): for a second or
// two nobody asks again on that account, and a request at least that large which a process cannot cover is refused
// with no statement (lease-admission.ts, SPENT_MS). Without it, 64 processes on an account spent under load asked
// every other one for each request they could not cover (25 asks and 1,500 answers a second), and the requests met
// their deadline (503) instead of their 429.

export const QUOTA_CHANNEL = "gateway_quota";

/**
 * How long a lease waits for the other processes' answers before it refuses anyway: a process that stopped
 * answering (its leases expire) must not hold every refusal for long; a live one answers within a sync. Never more
 * than the caller allows (`maxWaitMs`: what leaves the request time for its next sync before its deadline).
 */
const GIVE_BACK_WAIT_MS = 1_000;

export interface GiveBack {
  /**
   * Asks the `others` processes with a lease on `accountId` to give back their unused units, up to `shortfall`
   * each; resolves once all answered (or after the wait).
   */
  ask(accountId: string, others: number, shortfall: bigint, maxWaitMs: number): Promise<void>;
  /** Tells the other processes that a request of `amount` on `accountId` was refused after they were all asked. */
  tellSpent(accountId: string, amount: bigint): void;
  stop(): void;
}

/** What a process does when the others speak on the channel. */
export interface GiveBackPeer {
  /** This process's instance id, so that it does not answer itself. */
  selfId(): string;
  /**
   * Gives back this process's unused units on the account, up to `wanted` (undefined: all), resolving once
   * committed with how many (null: it holds no lease there, and does not answer).
   */
  give(accountId: string, wanted: bigint | undefined): Promise<bigint | null>;
  /** Another process refused a request of `amount` on the account after asking every one. */
  spent(accountId: string, amount: bigint): void;
}

export function createGiveBack(listener: Listener | undefined, peer: GiveBackPeer): GiveBack {
  /** The asks waiting for answers, by their id: one call per answer. */
  const waiting = new Map<string, () => void>();
  let stopped = false;
  listener?.on(QUOTA_CHANNEL, (payload) => {
    const [verb, accountId, askId, arg, amount] = payload.split(":");
    if (!accountId || !askId) return;
    if (verb === "ask" && arg !== peer.selfId() && !stopped) {
      // The asking process refuses after its wait anyway: a give-back that failed is retried by its lease, and an
      // answer that a fault kept from being sent is not worth a retry (nor, unhandled, the process). An ask with no
      // shortfall (a process of an earlier version) is for everything free.
      void peer
        .give(accountId, units(amount))
        .then((given) => (given === null ? undefined : listener.notify(QUOTA_CHANNEL, `gave:${accountId}:${askId}:${given}`)))
        .catch(() => {});
    } else if (verb === "gave") {
      waiting.get(askId)?.();
    } else if (verb === "spent" && arg !== peer.selfId() && !stopped) {
      const refused = units(amount);
      if (refused !== undefined) peer.spent(accountId, refused);
    }
  });
  return {
    ask(accountId, others, shortfall, maxWaitMs) {
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
        listener.notify(QUOTA_CHANNEL, `ask:${accountId}:${askId}:${peer.selfId()}:${shortfall}`).catch(done);
      });
    },
    tellSpent(accountId, amount) {
      if (!listener?.listening() || stopped) return;
      // Not worth a retry: a process that missed it asks once more.
      listener.notify(QUOTA_CHANNEL, `spent:${accountId}:-:${peer.selfId()}:${amount}`).catch(() => {});
    },
    stop() {
      stopped = true;
    },
  };
}

/** A count of units as a message states it, or undefined when it states none. */
function units(text: string | undefined): bigint | undefined {
  return text !== undefined && /^[0-9]{1,19}$/.test(text) ? BigInt(text) : undefined;
}
