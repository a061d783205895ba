import { beforeAll, describe, expect, it } from "vitest";
import { DatabaseUnavailableError } from "../../src/db/faults.js";
import { createQuotaLedger, type Hold, type LedgerOptions, type QuotaLedger } from "../../src/quota/index.js";
import type { TestDatabase } from "../helpers/db.js";
import { MAX_HOLD_SECONDS, useLedgerFixture } from "../helpers/ledger-fixture.js";
import { lockAccount } from "../helpers/metering-checks.js";
import { loseReplies } from "../helpers/sql-faults.js";

// A lease's sync whose reply was lost is sent again as it was (its outcome is unknown): what was queued on the lease
// while it failed went into no attempt. database-faults.test.ts, "connections cut every 100 ms during a burst", saw
// it as a few requests waiting out the request deadline with no statement running: nothing synced them again until
// another request of the same account came.

describe("a lease whose sync is sent again after a lost reply", () => {
  const fixture = useLedgerFixture("lease-stall");
  let db: TestDatabase;
  beforeAll(() => void ({ db } = fixture));

  const ledgerWith = (options: Partial<LedgerOptions> = {}) =>
    createQuotaLedger(db.pool, { maxHoldSeconds: MAX_HOLD_SECONDS, instance: fixture.live, clock: fixture.clock, ...options });
  const input = (userId: string, amount: bigint) => ({
    kind: "daily_allowance" as const,
    userId,
    amount,
    base: 1_000_000n,
    requestId: "req_stall",
  });
  const hold = async (ledger: QuotaLedger, userId: string, amount: bigint): Promise<Hold> => {
    const result = await ledger.reserve(input(userId, amount));
    if (!result.ok) throw new Error(`reserve of ${amount} refused`);
    return result.hold;
  };

  /**
   * Settles `first` in a sync whose reply is lost (it commits), and runs `meanwhile` while that sync waits on the
   * lease's lock, so that whatever it queues arrives during the attempt that fails.
   */
  async function lostSettlement(ledger: QuotaLedger, user: string, first: Hold, meanwhile: () => void) {
    const lost = loseReplies(db.pool, { times: 1, forMs: 30_000, when: (s) => s.name === "quota_post_lease" });
    await lost.applied;
    const lock = await lockAccount(db.pool, user, "leases");
    let settled: Promise<unknown>;
    try {
      settled = ledger.settle(first.id, 5n);
      await expect.poll(lock.waiters).toBe(1);
      meanwhile();
    } finally {
      await lock.unlock();
    }
    await expect(settled).resolves.toBe("committed");
    expect(lost.stats().lost).toBe(1);
  }

  it("admits a reservation that started waiting while the sync failed", { timeout: 30_000 }, async () => {
    const user = await fixture.newUser();
    const ledger = ledgerWith({ admissionTimeoutMs: 3000 });
    const first = await hold(ledger, user, 10n);
    let next!: Promise<unknown>;
    // More than the lease has free: it waits for a sync.
    await lostSettlement(ledger, user, first, () => void (next = ledger.reserve(input(user, 1000n))));
    const outcome = await next.catch((err: unknown) => err);
    expect(outcome).not.toBeInstanceOf(DatabaseUnavailableError);
    expect(outcome).toMatchObject({ ok: true });
    await ledger.close();
  });

  it("a lease closed while the sync failed gives its units back: nothing stays pending", { timeout: 30_000 }, async () => {
    const user = await fixture.newUser();
    const ledger = ledgerWith();
    const first = await hold(ledger, user, 10n);
    let closing!: Promise<void>;
    await lostSettlement(ledger, user, first, () => void (closing = ledger.close()));
    await closing;
    const { rows } = await db.pool.query<{ pending: string; leases: string[] }>(
      `select a.debits_pending::text as pending, array_agg(l.status || ':' || l.amount) as leases
       from quota_accounts a join quota_leases l on l.account_id = a.id where a.id = $1 group by a.id`,
      [first.accountId],
    );
    expect(rows[0]).toEqual({ pending: "0", leases: ["closed:0"] });
  });
});
