import { beforeAll, describe, expect, it } from "vitest";
import type { QuotaLedger, ReserveInput } from "../../src/quota/index.js";
import type { TestDatabase } from "../helpers/db.js";
import { useLedgerFixture } from "../helpers/ledger-fixture.js";

// Restorations (docs/billing.md): units added to an account on top of its base credits (a reserve reset, a
// received transfer). They must survive every process's next lease sync, which sets the base credits to the
// plan's allowance, and show in the balance; applying the same operation twice is one effect.

describe("restorations", () => {
  const fixture = useLedgerFixture("restore");
  let db: TestDatabase;
  let ledger: QuotaLedger;
  beforeAll(() => void ({ db, ledger } = fixture));

  const daily = (userId: string, base = 1000n) => ({ kind: "daily_allowance" as const, userId, base });
  const input = (userId: string, amount: bigint, base = 1000n): ReserveInput => ({
    kind: "daily_allowance",
    userId,
    base,
    amount,
    requestId: "req_restore",
  });
  const hold = async (on: QuotaLedger, userId: string, amount: bigint, base = 1000n) => {
    const result = await on.reserve(input(userId, amount, base));
    if (!result.ok) throw new Error(`reserve of ${amount} refused`);
    return result.hold;
  };
  const restoreSpent = (userId: string, reference: string, amount = 10_000n, source = "reserve_reset") =>
    ledger.restore({ ...daily(userId), amount, upToSpent: true, source, reference });

  it("refills what was spent, survives every process's next sync, and shows in the balance", async () => {
    const user = await fixture.newUser();
    const other = (await fixture.process()).ledger;
    await ledger.settle((await hold(ledger, user, 900n)).id, 900n);
    await ledger.flush();
    await expect(ledger.reserve(input(user, 200n))).resolves.toMatchObject({ ok: false, allowance: 1000n, used: 900n });
    // The refused sync leased the 100 left; given back, nothing is reserved.
    await ledger.flush();

    // At most what was spent: 900, although 10,000 were asked for.
    expect(await restoreSpent(user, "r1")).toMatchObject({ applied: 900n, duplicate: false });
    expect(await ledger.balance(daily(user))).toMatchObject({ credits: 1000n, restored: 900n, used: 900n, reserved: 0n, remaining: 1000n });

    // Syncs of both processes (each sets the base credits to the plan's) keep the restoration.
    const mine = await hold(ledger, user, 600n);
    const theirs = await hold(other, user, 300n);
    await Promise.all([ledger.settle(mine.id, 600n), other.settle(theirs.id, 300n)]);
    await Promise.all([ledger.flush(), other.flush()]);
    expect(await ledger.balance(daily(user))).toMatchObject({ credits: 1000n, restored: 900n, used: 1800n, remaining: 100n });
    // A refusal states used + reserved (the other process's charges may still sit on its lease, counted as reserved).
    const refused = await ledger.reserve(input(user, 101n));
    expect(refused).toMatchObject({ ok: false, allowance: 1900n });
    expect(!refused.ok && refused.used + refused.reserved).toBe(1800n);

    // A plan change still applies at once; the restoration stays on top of the new base.
    const upgraded = await hold(ledger, user, 500n, 1500n);
    await ledger.release(upgraded.id);
    await ledger.flush();
    expect(await ledger.balance(daily(user, 1500n))).toMatchObject({ credits: 1500n, restored: 900n, remaining: 600n });
    const { rows } = await db.pool.query("select credits::text, restored::text from quota_accounts where id = $1", [mine.accountId]);
    expect(rows[0]).toEqual({ credits: "1500", restored: "900" });
  });

  it("applies an operation once: again, and concurrently, it returns the first outcome", async () => {
    const user = await fixture.newUser();
    await ledger.settle((await hold(ledger, user, 400n)).id, 400n);
    await ledger.flush();
    const outcomes = await Promise.all(Array.from({ length: 8 }, () => restoreSpent(user, "same", 300n, "transfer")));
    expect(outcomes.filter((o) => !o.duplicate)).toHaveLength(1);
    for (const o of outcomes) expect(o.applied).toBe(300n);
    // Spent is now 100: a later retry of the same operation still says 300 and changes nothing.
    expect(await restoreSpent(user, "same", 300n, "transfer")).toMatchObject({ applied: 300n, duplicate: true });
    expect(await ledger.balance(daily(user))).toMatchObject({ restored: 300n, remaining: 900n });
    const { rows } = await db.pool.query(
      "select count(*)::int as n from quota_restorations where source = 'transfer' and reference = 'same'",
    );
    expect(rows[0].n).toBe(1);
  });

  it("records nothing-spent as an applied 0, so a retry after spending is still no second effect", async () => {
    const user = await fixture.newUser();
    expect(await restoreSpent(user, "early")).toMatchObject({ applied: 0n, duplicate: false });
    await ledger.settle((await hold(ledger, user, 500n)).id, 500n);
    await ledger.flush();
    expect(await restoreSpent(user, "early")).toMatchObject({ applied: 0n, duplicate: true });
    expect(await ledger.balance(daily(user))).toMatchObject({ restored: 0n, remaining: 500n });
    // Without the cap, the amount as asked; a negative amount is refused.
    expect(await ledger.restore({ ...daily(user), amount: 50n, upToSpent: false, source: "grant", reference: "g1" })).toMatchObject({
      applied: 50n,
    });
    await expect(ledger.restore({ ...daily(user), amount: -1n, upToSpent: false, source: "grant", reference: "g2" })).rejects.toThrow(
      RangeError,
    );
  });

  it("restores today's account by the ledger's clock: yesterday's restoration does not carry over", async () => {
    const user = await fixture.newUser();
    fixture.clock.set("2026-11-24T23:00:00Z");
    await ledger.settle((await hold(ledger, user, 700n)).id, 700n);
    await ledger.flush();
    expect(await restoreSpent(user, "yesterday")).toMatchObject({ applied: 700n });
    fixture.clock.set("2026-11-25T00:00:01Z");
    expect(await ledger.balance(daily(user))).toMatchObject({ period: "2026-11-25", restored: 0n, used: 0n, remaining: 1000n });
    fixture.clock.set(new Date());
  });
});
