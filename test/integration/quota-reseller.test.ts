import { beforeAll, describe, expect, it } from "vitest";
import type { AccountBalance, Hold, QuotaLedger } from "../../src/quota/index.js";
import type { TestDatabase } from "../helpers/db.js";
import { useLedgerFixture } from "../helpers/ledger-fixture.js";

// The reseller USD balance: a second account kind on the same reserve/settle/release mechanism (leases,
// escrow), whose credits only the operator raises. Exactness across two processes, credits racing syncs,
// overshoot, and no mixing with the daily allowance.

describe("reseller balance", () => {
  const fixture = useLedgerFixture("reseller");
  let db: TestDatabase;
  let ledger: QuotaLedger;
  beforeAll(() => void ({ db, ledger } = fixture));

  const reserve = (userId: string, amount: bigint, on = ledger) =>
    on.reserve({ kind: "reseller_usd", userId, base: null, amount, requestId: "req_reseller" });
  const hold = async (userId: string, amount: bigint, on = ledger): Promise<Hold> => {
    const result = await reserve(userId, amount, on);
    if (!result.ok) throw new Error(`reserve of ${amount} refused`);
    return result.hold;
  };
  const second = async () => (await fixture.process()).ledger;
  const reseller = (b: AccountBalance) => ({
    credited: b.credits + b.restored,
    spent: b.used,
    reserved: b.reserved,
    available: b.remaining,
  });
  const resellerBalance = async (userId: string) => reseller(await ledger.balance({ kind: "reseller_usd", userId, base: null }));
  const credit = async (userId: string, amount: bigint, note: string) => reseller(await ledger.creditReseller(userId, amount, note));
  const settledBalance = async (userId: string, ...ledgers: QuotaLedger[]) => {
    for (const l of ledgers.length > 0 ? ledgers : [ledger]) await l.flush();
    return resellerBalance(userId);
  };
  const accounts = async (userId: string) =>
    (
      await db.pool.query<{ kind: string; period: string }>("select kind, period from quota_accounts where user_id = $1 order by kind", [
        userId,
      ])
    ).rows;

  it("refuses before any credit, holds what was credited, and settles into spent", async () => {
    const user = await fixture.newUser();
    expect(await reserve(user, 1n)).toMatchObject({ ok: false, allowance: 0n });
    expect(await resellerBalance(user)).toEqual({ credited: 0n, spent: 0n, reserved: 0n, available: 0n });
    expect(await credit(user, 1000n, "first top-up")).toEqual({ credited: 1000n, spent: 0n, reserved: 0n, available: 1000n });
    const h = await hold(user, 700n);
    expect(await reserve(user, 301n)).toMatchObject({ ok: false, allowance: 1000n });
    await ledger.settle(h.id, 650n);
    expect(await settledBalance(user)).toEqual({ credited: 1000n, spent: 650n, reserved: 0n, available: 350n });
    const released = await hold(user, 350n);
    await ledger.release(released.id);
    expect(await settledBalance(user)).toMatchObject({ spent: 650n, available: 350n });
    // The balance is its own account: the day's allowance was never touched.
    expect(await accounts(user)).toEqual([{ kind: "reseller_usd", period: "balance" }]);
    const { rows } = await db.pool.query("select amount::text, note from reseller_credits where user_id = $1", [user]);
    expect(rows).toEqual([{ amount: "1000", note: "first top-up" }]);
  });

  it("sees a credit at once, also while a lease holds part of the balance", async () => {
    const user = await fixture.newUser();
    await credit(user, 100n, "");
    const h = await hold(user, 100n);
    expect(await reserve(user, 50n)).toMatchObject({ ok: false });
    await credit(user, 50n, "more");
    const more = await hold(user, 50n);
    await ledger.settle(h.id, 100n);
    await ledger.settle(more.id, 50n);
    expect(await settledBalance(user)).toEqual({ credited: 150n, spent: 150n, reserved: 0n, available: 0n });
  });

  it("posts an overshoot below zero and refuses until a credit covers it", async () => {
    const user = await fixture.newUser();
    await credit(user, 100n, "");
    await ledger.settle((await hold(user, 80n)).id, 130n);
    expect(await settledBalance(user)).toMatchObject({ spent: 130n, available: -30n });
    expect(await reserve(user, 0n)).toMatchObject({ ok: false });
    await credit(user, 40n, "");
    expect((await reserve(user, 10n)).ok).toBe(true);
  });

  it("never holds more than the credits across two processes, loses no credit racing their syncs, books every settle", async () => {
    const user = await fixture.newUser();
    const ledgers = [ledger, await second()];
    await credit(user, 10_000n, "");
    const amounts = Array.from({ length: 200 }, (_, i) => BigInt(1 + ((i * 7919) % 150)));
    const [results] = await Promise.all([
      Promise.all(amounts.map(async (amount, i) => ({ on: ledgers[i % 2]!, result: await reserve(user, amount, ledgers[i % 2]) }))),
      Promise.all(
        Array.from({ length: 20 }, () => fixture.other.query("select 1").then(() => ledger.creditReseller(user, 100n, "racing"))),
      ),
    ]);
    const granted = results.flatMap(({ on, result }) => (result.ok ? [{ on, hold: result.hold }] : []));
    const held = granted.reduce((sum, g) => sum + g.hold.amount, 0n);
    expect(held).toBeLessThanOrEqual(12_000n);
    expect(granted.length).toBeGreaterThan(0);
    const duringHolds = await resellerBalance(user);
    expect(duringHolds.credited).toBe(12_000n);
    expect(duringHolds.spent + duringHolds.reserved).toBeLessThanOrEqual(12_000n);
    let spent = 0n;
    await Promise.all(
      granted.map(({ on, hold: h }, i) => {
        if (i % 4 === 0) return on.release(h.id);
        spent += h.amount - 1n;
        return on.settle(h.id, h.amount - 1n);
      }),
    );
    expect(await settledBalance(user, ...ledgers)).toEqual({ credited: 12_000n, spent, reserved: 0n, available: 12_000n - spent });
    await ledgers[1]!.close();
  });
});
