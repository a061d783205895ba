import { beforeAll, describe, expect, it, vi } from "vitest";
import { createPool, type Pool } from "../../src/db/pool.js";
import {
  createQuotaLedger,
  HoldResolvedError,
  registerInstance,
  type Hold,
  type Instance,
  type QuotaLedger,
} from "../../src/quota/index.js";
import { createHoldResolver } from "../../src/quota/settle-batch.js";
import type { TestDatabase } from "../helpers/db.js";
import { MAX_HOLD_SECONDS, useLedgerFixture } from "../helpers/ledger-fixture.js";

// Settlements and releases of one process are coalesced into one statement per batch (src/quota/settle-batch.ts).
// The single-call semantics are covered in quota-ledger.test.ts; these tests are about what batching adds.


describe("quota ledger: batched settlement", () => {
  const fixture = useLedgerFixture("batch", { countAccountUpdates: true });
  let db: TestDatabase;
  let other: Pool;
  let ledger: QuotaLedger;
  let live: Instance;
  beforeAll(() => void ({ db, other, ledger, live } = fixture));
  const newUser = fixture.newUser;
  const hold = async (userId: string, amount: bigint, extra: { instanceId?: string; now?: Date } = {}) => {
    const result = await ledger.reserve({
      userId, amount, dailyAllowance: 1_000_000n, requestId: "req_batch", instanceId: live.id, ...extra,
    });
    if (!result.ok) throw new Error(`reserve of ${amount} refused`);
    return result.hold;
  };
  const holds = (userId: string, amounts: bigint[]) => Promise.all(amounts.map((a) => hold(userId, a)));
  const accountOf = async (h: Hold) => {
    const { rows } = await db.pool.query<{ debits_posted: string; debits_pending: string }>(
      "select debits_posted, debits_pending from quota_accounts where id = $1",
      [h.accountId],
    );
    return { posted: BigInt(rows[0]!.debits_posted), pending: BigInt(rows[0]!.debits_pending) };
  };
  const statusOf = async (h: Hold) =>
    (await db.pool.query<{ status: string; charged: string | null }>("select status, charged from quota_holds where id = $1", [h.id])).rows[0]!;
  const updatesOf = async (h: Hold) =>
    (await db.pool.query<{ n: number }>("select count(*)::int as n from account_updates where account_id = $1", [h.accountId])).rows[0]!.n;
  // Batch statements sent on `pool` while `run` runs.
  const counting = async <T>(pool: Pool, run: () => Promise<T>): Promise<{ result: T; statements: number }> => {
    const spy = vi.spyOn(pool, "query");
    try {
      const result = await run();
      const statements = spy.mock.calls.filter(([q]) => (q as { name?: string }).name === "quota_resolve_batch").length;
      return { result, statements };
    } finally {
      spy.mockRestore();
    }
  };
  const expired = async (userId: string, amounts: bigint[]) => {
    const dead = await registerInstance(db.pool, { heartbeatMs: 3_600_000 });
    const made = await Promise.all(amounts.map((a) => hold(userId, a, { instanceId: dead.id })));
    await dead.stop();
    await ledger.expireAbandoned();
    return made;
  };

  it("100 concurrent settlements of one user touch the account row a few times, and book every charge", async () => {
    const user = await newUser();
    const made = await holds(user, Array.from({ length: 100 }, (_, i) => BigInt(10 + i)));
    const charges = made.map((h, i) => (i % 3 === 0 ? h.amount + 7n : h.amount / 2n)); // some overshoot
    const before = await updatesOf(made[0]!);
    const { statements } = await counting(db.pool, () => Promise.all(made.map((h, i) => ledger.settle(h.id, charges[i]!))));
    const updates = (await updatesOf(made[0]!)) - before;

    const total = charges.reduce((a, b) => a + b, 0n);
    expect(await accountOf(made[0]!)).toEqual({ posted: total, pending: 0n });
    for (const [i, h] of made.entries()) expect(await statusOf(h)).toEqual({ status: "posted", charged: String(charges[i]) });
    expect(statements).toBeLessThanOrEqual(10);
    expect(updates).toBeLessThanOrEqual(statements);
    console.info(`settle batch: 100 settlements in ${statements} statement(s), ${updates} account row update(s)`);
  });

  it("a batch mixing settle and release applies each hold once; duplicates and resolved holds reject", async () => {
    const user = await newUser();
    const [a, b, c, done] = await holds(user, [100n, 200n, 300n, 400n]);
    const [late, lost] = await expired(user, [50n, 60n]);
    await ledger.settle(done!.id, 1n);
    expect(await accountOf(a!)).toEqual({ posted: 1n, pending: 600n });

    const calls = [
      ledger.settle(a!.id, 10n),
      ledger.release(b!.id),
      ledger.settle(c!.id, 350n),
      ledger.settle(a!.id, 99n), // the duplicate: no effect
      ledger.release(a!.id),
      ledger.settle(done!.id, 5n), // settled before
      ledger.settle(late!.id, 45n), // expired: posts, its pending amount was returned by the expiry
      ledger.release(lost!.id), // expired: nothing to void
      ledger.settle("00000000-0000-4000-8000-000000000000", 1n), // unknown
    ];
    const { result, statements } = await counting(db.pool, () => Promise.allSettled(calls));
    expect(statements).toBe(1);
    expect(result.map((o) => o.status)).toEqual([
      "fulfilled", "fulfilled", "fulfilled", "rejected", "rejected", "rejected", "fulfilled", "rejected", "rejected",
    ]);
    for (const o of result) if (o.status === "rejected") expect(o.reason).toBeInstanceOf(HoldResolvedError);
    expect((result[3] as PromiseRejectedResult).reason).toMatchObject({ holdId: a!.id });

    expect(await statusOf(a!)).toEqual({ status: "posted", charged: "10" });
    expect(await statusOf(b!)).toEqual({ status: "voided", charged: null });
    expect(await statusOf(late!)).toEqual({ status: "posted", charged: "45" });
    expect((await statusOf(lost!)).status).toBe("expired");
    expect(await accountOf(a!)).toEqual({ posted: 1n + 10n + 350n + 45n, pending: 0n });
  });

  it("a batch spanning several users and days gives each account its own totals, one update each", async () => {
    const [u1, u2, u3] = [await newUser(), await newUser(), await newUser()];
    const yesterday = new Date(Date.now() - 86_400_000);
    const plan: Array<[Hold, bigint | null]> = [];
    for (const [user, n] of [[u1, 5], [u2, 8], [u3, 3]] as const) {
      for (const [i, h] of (await holds(user, Array.from({ length: n }, (_, i) => BigInt(100 * (i + 1))))).entries()) {
        plan.push([h, i % 4 === 3 ? null : BigInt(37 * (i + 1))]);
      }
    }
    for (const h of await Promise.all([hold(u1, 70n, { now: yesterday }), hold(u1, 80n, { now: yesterday })])) plan.push([h, 75n]);
    plan.reverse(); // not grouped by account in the batch

    const accounts = [...new Map(plan.map(([h]) => [h.accountId, h])).values()];
    expect(accounts).toHaveLength(4);
    const before = await Promise.all(accounts.map(updatesOf));
    const { statements } = await counting(db.pool, () =>
      Promise.all(plan.map(([h, charged]) => (charged === null ? ledger.release(h.id) : ledger.settle(h.id, charged)))),
    );
    expect(statements).toBe(1);
    for (const [i, account] of accounts.entries()) {
      const posted = plan.filter(([h]) => h.accountId === account.accountId).reduce((sum, [, c]) => sum + (c ?? 0n), 0n);
      expect(await accountOf(account)).toEqual({ posted, pending: 0n });
      expect((await updatesOf(account)) - before[i]!).toBe(1);
    }
  });

  it("batches are capped, and what arrives during a flush forms the next batch", async () => {
    const user = await newUser();
    const made = await holds(user, Array.from({ length: 30 }, () => 10n));
    const resolve = createHoldResolver(db.pool, 7);
    const { statements } = await counting(db.pool, async () => {
      const first = made.slice(0, 20).map((h) => resolve(h.id, 4n));
      await first[0]; // the rest arrive while the later batches are running
      await Promise.all([...first, ...made.slice(20).map((h) => resolve(h.id, null))]);
    });
    expect(statements).toBeGreaterThanOrEqual(5); // 30 holds, at most 7 a statement
    expect(statements).toBeLessThanOrEqual(6);
    expect(await accountOf(made[0]!)).toEqual({ posted: 80n, pending: 0n });
  });

  it("a hold that fails the statement fails alone: the batch is re-run hold by hold", async () => {
    const user = await newUser();
    const [a, b, c] = await holds(user, [10n, 20n, 30n]);
    const outcomes = await Promise.allSettled([
      ledger.settle(a!.id, 5n),
      ledger.settle("not-a-hold-id", 1n),
      ledger.settle(b!.id, 2n ** 63n), // beyond bigint
      ledger.release(c!.id),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "rejected", "fulfilled"]);
    expect((outcomes[1] as PromiseRejectedResult).reason).toMatchObject({ code: "22P02" });
    expect((outcomes[2] as PromiseRejectedResult).reason).toMatchObject({ code: "22003" });
    expect(await statusOf(b!)).toEqual({ status: "pending", charged: null });
    expect(await accountOf(a!)).toEqual({ posted: 5n, pending: 20n });
    await ledger.release(b!.id);
  });

  it("a failed statement rejects every caller of its batch with the error, none with HoldResolvedError", async () => {
    const unreachable = createPool("postgres://postgres@127.0.0.1:1/none", 2, () => {});
    const broken = createQuotaLedger(unreachable, { maxHoldSeconds: MAX_HOLD_SECONDS });
    const user = await newUser();
    const [a, b] = await holds(user, [10n, 20n]);
    const outcomes = await Promise.allSettled([broken.settle(a!.id, 5n), broken.release(b!.id), broken.settle(a!.id, 5n)]);
    const reasons = outcomes.map((o) => (o as PromiseRejectedResult).reason as Error);
    expect(new Set(reasons).size).toBe(1);
    expect(reasons[0]).not.toBeInstanceOf(HoldResolvedError);
    expect(reasons[0]).toMatchObject({ code: "ECONNREFUSED" });
    await unreachable.end();
    // The holds are untouched; the caller's retry goes through.
    await Promise.all([ledger.settle(a!.id, 5n), ledger.release(b!.id)]);
    expect(await accountOf(a!)).toEqual({ posted: 5n, pending: 0n });
  });

  it("two processes resolving the same holds of shared accounts in opposite orders apply each once, without deadlock", async () => {
    const owners = await Promise.all(Array.from({ length: 4 }, () => newUser()));
    const made = (await Promise.all(owners.map((u) => holds(u, Array.from({ length: 50 }, (_, i) => BigInt(i + 1)))))).flat();
    const second = createQuotaLedger(other, { maxHoldSeconds: MAX_HOLD_SECONDS });
    const charge = (h: Hold) => h.amount * 2n;
    // One process settles every hold; the other settles or releases every hold, in reverse order.
    const releasedByOther = (i: number) => i % 3 === 0;
    const [mine, theirs] = await Promise.all([
      Promise.allSettled(made.map((h) => ledger.settle(h.id, charge(h)))),
      Promise.allSettled(made.map((h, i) => [h, i] as const).reverse()
        .map(([h, i]) => (releasedByOther(i) ? second.release(h.id) : second.settle(h.id, charge(h))))),
    ]);
    theirs.reverse();
    const posted = new Map<string, bigint>();
    for (const [i, h] of made.entries()) {
      const [a, b] = [mine[i]!, theirs[i]!];
      expect([a, b].filter((o) => o.status === "fulfilled")).toHaveLength(1);
      for (const o of [a, b]) if (o.status === "rejected") expect(o.reason).toBeInstanceOf(HoldResolvedError);
      const charged = a.status === "fulfilled" || !releasedByOther(i) ? charge(h) : 0n;
      posted.set(h.accountId, (posted.get(h.accountId) ?? 0n) + charged);
    }
    for (const [accountId, total] of posted) {
      expect(await accountOf({ accountId } as Hold)).toEqual({ posted: total, pending: 0n });
    }
    const again = await Promise.allSettled(made.map((h) => second.settle(h.id, 1n)));
    expect(again.every((o) => o.status === "rejected" && o.reason instanceof HoldResolvedError)).toBe(true);
  });
});
