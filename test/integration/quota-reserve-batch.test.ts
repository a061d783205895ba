import { beforeAll, describe, expect, it, vi } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import {
  createQuotaLedger,
  type Instance,
  type QuotaLedger,
  type ReserveInput,
  type ReserveResult,
} from "../../src/quota/index.js";
import type { TestDatabase } from "../helpers/db.js";
import { MAX_HOLD_SECONDS, useLedgerFixture } from "../helpers/ledger-fixture.js";

// Reservations of one account in one process are coalesced into one statement per batch
// (src/quota/reserve-batch.ts). Single-call semantics are covered in quota-ledger.test.ts; these tests are about
// what batching adds.


describe("quota ledger: batched reservation", () => {
  const fixture = useLedgerFixture("reserve", { countAccountUpdates: true });
  let db: TestDatabase;
  let other: Pool;
  let ledger: QuotaLedger;
  let live: Instance;
  beforeAll(() => void ({ db, other, ledger, live } = fixture));
  const newUser = fixture.newUser;
  const input = (userId: string, amount: bigint, extra: Partial<ReserveInput> = {}): ReserveInput => ({
    userId, amount, dailyAllowance: 1000n, requestId: "req_batch", instanceId: live.id, ...extra,
  });
  const accountOf = async (userId: string) => {
    const { rows } = await db.pool.query<{ id: string; credits: string; debits_posted: string; debits_pending: string }>(
      "select id, credits, debits_posted, debits_pending from quota_accounts where user_id = $1",
      [userId],
    );
    const row = rows[0]!;
    return { id: row.id, credits: BigInt(row.credits), posted: BigInt(row.debits_posted), pending: BigInt(row.debits_pending) };
  };
  const pendingHolds = async (accountId: string) =>
    (await db.pool.query<{ id: string; amount: string }>(
      "select id, amount from quota_holds where account_id = $1 and status = 'pending'",
      [accountId],
    )).rows;
  const updatesOf = async (accountId: string) =>
    (await db.pool.query<{ n: number }>("select count(*)::int as n from account_updates where account_id = $1", [accountId])).rows[0]!.n;
  // Reserve statements sent on `pool` while `run` runs.
  const counting = async <T>(pool: Pool, run: () => Promise<T>): Promise<{ result: T; statements: number }> => {
    const spy = vi.spyOn(pool, "query");
    try {
      const result = await run();
      const statements = spy.mock.calls.filter(([q]) => (q as { name?: string }).name === "quota_reserve_batch").length;
      return { result, statements };
    } finally {
      spy.mockRestore();
    }
  };
  const oks = (results: ReserveResult[]) => results.map((r) => r.ok);

  it("100 concurrent reserves of one user take a few statements and admit exactly the arrival-order prefix that fits", async () => {
    const user = await newUser();
    const allowance = 3000n; // 10 + ... + 77 = 2958, + 78 > 3000
    const warm = await ledger.reserve(input(user, 0n, { dailyAllowance: allowance })); // the account exists
    if (warm.ok) await ledger.release(warm.hold.id);
    const amounts = Array.from({ length: 100 }, (_, i) => BigInt(10 + i)); // increasing: once one is refused, so is every later one
    const id = (await accountOf(user)).id;
    const before = await updatesOf(id);
    const { result, statements } = await counting(db.pool, () =>
      Promise.all(amounts.map((a) => ledger.reserve(input(user, a, { dailyAllowance: allowance })))),
    );
    const updates = (await updatesOf(id)) - before;

    const fits = (() => {
      let sum = 0n;
      return amounts.map((a) => (sum += a) <= allowance);
    })();
    expect(oks(result)).toEqual(fits);
    expect(fits.filter(Boolean)).toHaveLength(68);
    const held = amounts.filter((_, i) => fits[i]).reduce((a, b) => a + b, 0n);
    expect(await accountOf(user)).toMatchObject({ posted: 0n, pending: held });
    expect(held).toBeLessThanOrEqual(allowance);
    const holds = await pendingHolds(id);
    expect(holds).toHaveLength(68);
    for (const r of result) if (r.ok) expect(holds.map((h) => h.id)).toContain(r.hold.id);
    for (const r of result) if (!r.ok) expect(r).toMatchObject({ allowance, used: 0n, reserved: held });
    expect(statements).toBeLessThanOrEqual(10);
    expect(updates).toBeLessThanOrEqual(statements);
    console.info(`reserve batch: 100 reserves in ${statements} statement(s), ${updates} account row update(s)`);
  });

  it("a batch is a strict prefix: after a refusal a later smaller call is refused too; a lone call is one statement", async () => {
    const user = await newUser();
    const { result, statements } = await counting(db.pool, () =>
      Promise.all([600n, 500n, 100n].map((a) => ledger.reserve(input(user, a)))),
    );
    expect(statements).toBe(1);
    expect(oks(result)).toEqual([true, false, false]);
    expect(result[1]).toMatchObject({ ok: false, allowance: 1000n, used: 0n, reserved: 600n });
    const lone = await counting(db.pool, () => ledger.reserve(input(user, 100n)));
    expect(lone.statements).toBe(1);
    expect(lone.result.ok).toBe(true);
    expect(await accountOf(user)).toMatchObject({ pending: 700n });
  });

  it("the first batch of the day creates the account with just the prefix that fits", async () => {
    const user = await newUser();
    const results = await Promise.all([400n, 0n, 600n, 1n, 0n].map((a) => ledger.reserve(input(user, a))));
    expect(oks(results)).toEqual([true, true, true, false, true]);
    const account = await accountOf(user);
    expect(account).toMatchObject({ credits: 1000n, posted: 0n, pending: 1000n });
    expect(await updatesOf(account.id)).toBe(0);
    // Nothing fits: no account is created, as with a single call.
    const none = await newUser();
    expect(oks(await Promise.all([1001n, 2000n].map((a) => ledger.reserve(input(none, a)))))).toEqual([false, false]);
    const { rowCount } = await db.pool.query("select 1 from quota_accounts where user_id = $1", [none]);
    expect(rowCount).toBe(0);
  });

  it("0-unit holds pass while remaining >= 0, also after a refused call, and not after an overshoot", async () => {
    const user = await newUser();
    const [big] = await Promise.all([ledger.reserve(input(user, 900n))]);
    expect(big!.ok).toBe(true);
    // A refused big call does not refuse a free one behind it; exactly spent still passes free ones.
    expect(oks(await Promise.all([200n, 0n, 100n, 0n].map((a) => ledger.reserve(input(user, a)))))).toEqual([
      false, true, false, true,
    ]);
    expect(await accountOf(user)).toMatchObject({ pending: 900n });
    if (!big!.ok) return;
    await ledger.settle(big!.hold.id, 1500n);
    const after = await Promise.all([0n, 0n, 1n].map((a) => ledger.reserve(input(user, a))));
    expect(oks(after)).toEqual([false, false, false]);
    expect(after[0]).toMatchObject({ ok: false, used: 1500n });
    // A 0-unit hold held in a batch comes back as a pending hold of 0.
    const fresh = await newUser();
    const free = await Promise.all([0n, 0n].map((a) => ledger.reserve(input(fresh, a, { dailyAllowance: 0n }))));
    expect(oks(free)).toEqual([true, true]);
    expect((await pendingHolds((await accountOf(fresh)).id)).map((h) => h.amount)).toEqual(["0", "0"]);
  });

  it("the last held call's allowance applies to the account", async () => {
    const user = await newUser();
    const results = await Promise.all([
      ledger.reserve(input(user, 600n)),
      ledger.reserve(input(user, 600n, { dailyAllowance: 2000n })),
      ledger.reserve(input(user, 900n, { dailyAllowance: 1000n })),
    ]);
    expect(oks(results)).toEqual([true, true, false]);
    expect(await accountOf(user)).toMatchObject({ credits: 2000n, pending: 1200n });
  });

  it("a call with bad data fails alone; the rest of its batch is applied", async () => {
    const user = await newUser();
    const outcomes = await Promise.allSettled([
      ledger.reserve(input(user, 100n)),
      ledger.reserve(input(user, 100n, { instanceId: "not-an-instance" })),
      ledger.reserve(input(user, 200n)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ code: "22P02" });
    expect(await accountOf(user)).toMatchObject({ pending: 300n });
  });

  it("two processes firing 100 concurrent reserves each never hold more than the allowance, one hold per ok", async () => {
    for (const fresh of [true, false]) {
      const user = await newUser();
      if (!fresh) {
        const warm = await ledger.reserve(input(user, 0n, { dailyAllowance: 5000n }));
        if (warm.ok) await ledger.release(warm.hold.id);
      }
      const allowance = 5000n;
      const ledgers = [ledger, createQuotaLedger(other, { maxHoldSeconds: MAX_HOLD_SECONDS })];
      const amounts = Array.from({ length: 200 }, (_, i) => BigInt(1 + ((i * 37) % 60)));
      const results = await Promise.all(
        amounts.map((a, i) => ledgers[i % 2]!.reserve(input(user, a, { dailyAllowance: allowance }))),
      );
      const granted = results.flatMap((r) => (r.ok ? [r.hold] : []));
      const account = await accountOf(user);
      const holds = await pendingHolds(account.id);
      const held = granted.reduce((sum, h) => sum + h.amount, 0n);
      expect(held).toBeLessThanOrEqual(allowance);
      expect(account.pending).toBe(held);
      expect(holds.reduce((sum, h) => sum + BigInt(h.amount), 0n)).toBe(held);
      expect(new Set(holds.map((h) => h.id))).toEqual(new Set(granted.map((h) => h.id)));
      // Amounts total 6000, so a refusal with room left for the smallest amount means a lost race, not a full account.
      expect(held).toBeGreaterThan(allowance - 60n);
      console.info(`reserve batch, two processes (${fresh ? "new" : "existing"} account): ${granted.length}/200 held, ${held}/${allowance}`);
    }
  });

  it("two processes creating the same account at once both get their holds (the loser re-runs)", async () => {
    const second = createQuotaLedger(other, { maxHoldSeconds: MAX_HOLD_SECONDS });
    const owners = await Promise.all(Array.from({ length: 40 }, () => newUser()));
    const { result, statements } = await counting(db.pool, () =>
      counting(other, () =>
        Promise.all(owners.flatMap((u) => [ledger.reserve(input(u, 500n)), second.reserve(input(u, 500n))])),
      ),
    );
    expect(result.result.every((r) => r.ok)).toBe(true);
    for (const u of owners) expect(await accountOf(u)).toMatchObject({ credits: 1000n, pending: 1000n });
    const reruns = statements + result.statements - 80;
    expect(reruns).toBeGreaterThanOrEqual(0);
    console.info(`reserve batch: 40 accounts created by two processes at once, ${reruns} re-run(s) after a lost race`);
  });

  it("a batch that loses the race to create the account re-runs and sees the other process's holds", async () => {
    const user = await newUser();
    const client = await other.connect();
    try {
      await client.query("begin");
      await client.query(
        "insert into quota_accounts (user_id, kind, period, credits, debits_pending) values ($1, 'daily_allowance', $2, 1000, 700)",
        [user, new Date().toISOString().slice(0, 10)],
      );
      const { result, statements } = await counting(db.pool, async () => {
        const pending = Promise.all([200n, 200n].map((a) => ledger.reserve(input(user, a))));
        await new Promise((resolve) => setTimeout(resolve, 100)); // the batch now waits on the uncommitted insert
        await client.query("commit");
        return pending;
      });
      expect(statements).toBe(2);
      expect(oks(result)).toEqual([true, false]);
      expect(result[1]).toMatchObject({ used: 0n, reserved: 900n });
      expect(await accountOf(user)).toMatchObject({ pending: 900n });
    } finally {
      client.release();
    }
  });

  it("calls arriving while a statement is in flight form the next batch, still in arrival order", async () => {
    const user = await newUser();
    const amounts = Array.from({ length: 60 }, (_, i) => BigInt(20 + i)); // 20 + ... + 59 = 1580, + 60 > 1600
    const { result, statements } = await counting(db.pool, async () => {
      const calls: Array<Promise<ReserveResult>> = [];
      for (const a of amounts) {
        calls.push(ledger.reserve(input(user, a, { dailyAllowance: 1600n })));
        if (calls.length % 6 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      return Promise.all(calls);
    });
    expect(oks(result)).toEqual(amounts.map((_, i) => i < 40));
    expect(statements).toBeGreaterThan(1);
    expect(statements).toBeLessThan(amounts.length / 2);
    expect(await accountOf(user)).toMatchObject({ pending: 1580n });
  });
});
