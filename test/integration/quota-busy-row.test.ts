import { describe, expect, it } from "vitest";
import { createPool, type Pool } from "../../src/db/pool.js";
import type { QuotaLedger } from "../../src/quota/index.js";
import { useLedgerFixture } from "../helpers/ledger-fixture.js";

// Many processes on one account whose syncs queue on its row (issue 34's hot-account fleet, docs/billing.md
// "Escrow"): each lease asks for a second of its demand ahead of running out, and those are only asks. The sync
// statement grants what the account has, so several processes spending one day at once, with every sync queued
// behind a lock on the account row, never admit more than the day between them, and each charge as a process saw
// it is what the database posted.

const ALLOWANCE = 200_000n;
const PROCESSES = 6;

const fx = useLedgerFixture("busy-row");

interface Seen {
  /** Each admitted request's units: its charge up to its hold. */
  admitted: bigint;
  charged: bigint;
  refused: number;
}

/** Reserves `hold` and settles `charge` until the first refusal, `inFlight` at a time. */
async function spend(ledger: QuotaLedger, userId: string, inFlight: number, seen: Seen) {
  let done = false;
  let n = 0;
  const worker = async () => {
    while (!done) {
      const hold = BigInt(300 + (n++ % 7) * 100);
      const charge = n % 10 === 0 ? hold + 50n : hold - 100n;
      const result = await ledger.reserve({ kind: "daily_allowance", userId, base: ALLOWANCE, amount: hold, requestId: `busy-${n}` });
      if (!result.ok) {
        seen.refused++;
        done = true;
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
      await ledger.settle(result.hold.id, charge);
      seen.admitted += charge < hold ? charge : hold;
      seen.charged += charge;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

describe("a day spent by several processes at once while the account row is busy", () => {
  it("never admit more than the day across processes whose syncs queue on the account row", async () => {
    const userId = await fx.newUser();
    const pools: Pool[] = [];
    const ledgers: QuotaLedger[] = [];
    for (let i = 0; i < PROCESSES; i++) {
      const pool = createPool(fx.db.url, 2, () => {});
      pools.push(pool);
      ledgers.push((await fx.process({ pool, leaseIdleMs: 60_000 })).ledger);
    }
    // Every process opens its lease (the account exists from then on).
    const firsts = await Promise.all(
      ledgers.map((l, i) => l.reserve({ kind: "daily_allowance", userId, base: ALLOWANCE, amount: 1n, requestId: `open-${i}` })),
    );
    for (const [i, r] of firsts.entries()) if (r.ok) await ledgers[i]!.settle(r.hold.id, 1n);
    // A locker holds the account row in bursts, so that syncs take long and the leads grow while the day is spent.
    const locker = await fx.db.pool.connect();
    let locking = true;
    const bursts = (async () => {
      while (locking) {
        await locker.query("begin");
        await locker.query("select 1 from quota_accounts where user_id = $1 for no key update", [userId]);
        await new Promise((resolve) => setTimeout(resolve, 150));
        await locker.query("commit");
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const seen = ledgers.map(() => ({ admitted: 1n, charged: 1n, refused: 0 }));
    try {
      await Promise.all(ledgers.map((l, i) => spend(l, userId, 8, seen[i]!)));
    } finally {
      locking = false;
      await bursts;
      locker.release();
    }
    await Promise.all(ledgers.map((l) => l.close()));
    await Promise.all(pools.map((p) => p.end()));

    const admitted = seen.reduce((sum, s) => sum + s.admitted, 0n);
    const charged = seen.reduce((sum, s) => sum + s.charged, 0n);
    const overrun = charged - admitted;
    const { rows } = await fx.db.pool.query<{ credits: string; posted: string; pending: string }>(
      "select credits::text, debits_posted::text as posted, debits_pending::text as pending from quota_account_balances where user_id = $1",
      [userId],
    );
    const account = rows[0]!;
    expect(seen.every((s) => s.refused >= 1)).toBe(true);
    expect(admitted).toBeLessThanOrEqual(ALLOWANCE);
    // Most of the day was spent before the refusals (without a LISTEN connection no process gives back on request,
    // so what the last leases held unused stays unspent).
    expect(admitted).toBeGreaterThan(ALLOWANCE / 2n);
    expect(BigInt(account.posted)).toBe(charged);
    expect(BigInt(account.posted) - overrun).toBeLessThanOrEqual(BigInt(account.credits));
    expect(account.pending).toBe("0");
  });
});
