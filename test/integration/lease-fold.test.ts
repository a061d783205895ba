import { beforeAll, describe, expect, it } from "vitest";
import { readAccount } from "../../src/quota/account-sql.js";
import { AUTO_RESET_THRESHOLD } from "../../src/quota/auto-reset.js";
import { reserveDurableRow } from "../../src/quota/durable-sql.js";
import { expireRows } from "../../src/quota/expire-sql.js";
import { reconcileLedger } from "../../src/quota/index.js";
import { leaseDirectPost } from "../../src/quota/lease-direct-sql.js";
import { openLease } from "../../src/quota/lease-open-sql.js";
import { leaseSync, type Resolution, type SyncLease } from "../../src/quota/lease-sql.js";
import { leaseRefund } from "../../src/quota/refund-sql.js";
import { creditResellerRow } from "../../src/quota/reseller.js";
import { useResetIn } from "../../src/quota/resets-sql.js";
import { restoreRow } from "../../src/quota/restore-sql.js";
import type { TestDatabase } from "../helpers/db.js";
import { fullSyncOf, useLedgerFixture } from "../helpers/ledger-fixture.js";

const syncLease = leaseSync();
const directPost = leaseDirectPost();
const refund = leaseRefund();

const KIND = "daily_allowance";
const PERIOD = "2026-11-22";

// A sync that only posts leaves the account row alone: the units its charges take out of an open lease move from
// the lease's `amount` to its `posted` (docs/billing.md, "Escrow"). These tests drive the real statements and check,
// for every statement that folds those units into the account's posted debits and every reader that adds them, the
// raw rows, the view quota_account_balances and the reconciliation, which must agree at every step.
describe("a lease's posted units, folded", () => {
  // The trigger records every UPDATE of quota_accounts: a post-only sync must cause none.
  const fixture = useLedgerFixture("lease-fold", { countAccountUpdates: true });
  let db: TestDatabase;
  let live: { id: string };
  beforeAll(() => void ({ db, live } = fixture));

  let requests = 0;
  const resolution = (charged: bigint | null, amount = charged ?? 10n): Resolution => ({
    holdId: crypto.randomUUID(),
    // Zero-padded, so that ordering by request id is the order they were made in.
    requestId: `req_fold${String(++requests).padStart(4, "0")}`,
    amount,
    charged,
    reservedAt: new Date(),
    record: null,
  });

  /** A post-only sync settling `resolutions`, of whose charges `take` came out of the lease. */
  const postOnly = (leaseId: string, seq: number, take: bigint, resolutions: Resolution[], instanceId = live.id): SyncLease => ({
    ...fullSyncOf(leaseId, seq, instanceId),
    need: 0n,
    headroom: 0n,
    post: resolutions.reduce((sum, r) => sum + (r.charged ?? 0n), 0n),
    take,
    postOnly: true,
    resolutions,
  });
  /**
   * A new user's day (or the account given, of 1000 credits) with one lease, granted 100 + (1000 - 100) / 4 = 325 by a
   * full sync. A base of null keeps the account's credits (a reseller balance).
   */
  const opened = async ({ instanceId = live.id, userId = "", kind = KIND, period = PERIOD, base = 1000n as bigint | null } = {}) => {
    userId ||= await fixture.newUser();
    const leaseId = crypto.randomUUID();
    const accountId = await openLease(db.pool, { leaseId, userId, kind, period, base, baseRevision: 0n, instanceId });
    expect(await syncLease(db.pool, fullSyncOf(leaseId, 1, instanceId, base))).toMatchObject({ live: true, granted: 325n });
    return { userId, leaseId, accountId, key: { userId, kind, period } };
  };
  /** The lease, its account's row as stored and the account as the view shows it. */
  const state = async (leaseId: string) =>
    (
      await db.pool.query(
        `select l.amount::text, l.posted::text as lease_posted, l.status, a.debits_posted::text as posted,
           a.debits_pending::text as pending, b.debits_posted::text as seen_posted, b.debits_pending::text as seen_pending
         from quota_leases l join quota_accounts a on a.id = l.account_id join quota_account_balances b on b.id = a.id
         where l.id = $1`,
        [leaseId],
      )
    ).rows[0];
  // Whole rows, updated_at included: a statement that wrote either row changes them.
  const accountRow = async (accountId: string, columns = "*") =>
    (await db.pool.query(`select ${columns} from quota_accounts where id = $1`, [accountId])).rows[0];
  const leaseRow = async (leaseId: string) => (await db.pool.query("select * from quota_leases where id = $1", [leaseId])).rows[0];
  const accountUpdates = async (accountId: string) =>
    (await db.pool.query<{ n: number }>("select count(*)::int as n from account_updates where account_id = $1", [accountId])).rows[0]!.n;
  const holds = async (leaseId: string) =>
    (await db.pool.query("select status, charged::text from quota_holds where lease_id = $1 order by request_id", [leaseId])).rows.map(
      (h) => [h.status, h.charged],
    );

  it("post-only syncs leave the account row alone while the view shows their charges; an overshoot writes only the excess", async () => {
    const { leaseId, accountId } = await opened();
    const before = await accountRow(accountId);
    const updates = await accountUpdates(accountId);
    await syncLease(db.pool, postOnly(leaseId, 2, 30n, [resolution(30n, 40n), resolution(null, 20n)]));
    const reply = await syncLease(db.pool, postOnly(leaseId, 3, 20n, [resolution(20n)]));
    // The reply's split is the row's, but what is free is exact: 1000 - 325 granted - 0 spent beyond the lease.
    expect(reply.credits + reply.restored - reply.posted - reply.pending).toBe(675n);
    expect(await accountRow(accountId)).toEqual(before);
    expect(await accountUpdates(accountId)).toBe(updates);
    expect(await state(leaseId)).toEqual({
      amount: "275",
      lease_posted: "50",
      status: "pending",
      posted: "0",
      pending: "325",
      seen_posted: "50",
      seen_pending: "275",
    });
    expect(await reconcileLedger(db.pool)).toEqual([]);
    // Charged 70 on a reservation of 60: the 60 stay on the lease, the 10 beyond it come out of the account.
    await syncLease(db.pool, postOnly(leaseId, 4, 60n, [resolution(70n, 60n)]));
    expect(await accountUpdates(accountId)).toBe(updates + 1);
    expect(await state(leaseId)).toEqual({
      amount: "215",
      lease_posted: "110",
      status: "pending",
      posted: "10",
      pending: "325",
      seen_posted: "120",
      seen_pending: "215",
    });
    expect(await reconcileLedger(db.pool)).toEqual([]);
    // The next full sync folds the 110 and posts its own 5: posted 10 + 110 + 5; pending 325 - 110 - 5 + 10 granted.
    const settled = { need: 10n, headroom: 0n, post: 5n, take: 5n, resolutions: [resolution(5n)] };
    const full = await syncLease(db.pool, { ...fullSyncOf(leaseId, 5, live.id), ...settled });
    expect(full).toMatchObject({ live: true, granted: 10n, posted: 125n, pending: 220n });
    expect(await state(leaseId)).toEqual({
      amount: "220",
      lease_posted: "0",
      status: "pending",
      posted: "125",
      pending: "220",
      seen_posted: "125",
      seen_pending: "220",
    });
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("a post-only sync commits while another transaction holds the account row FOR UPDATE: it takes no lock on it", async () => {
    const { leaseId, accountId } = await opened();
    const locker = await db.pool.connect();
    try {
      await locker.query("begin");
      await locker.query("select 1 from quota_accounts where id = $1 for update", [accountId]);
      // Its holds name the account by its id with no foreign key (whose check would lock the row FOR KEY SHARE
      // and wait here): on a hot account those outside locks deadlocked the statements that lock the row and then
      // update it (docs/billing.md, "Escrow").
      await syncLease(db.pool, postOnly(leaseId, 2, 30n, [resolution(30n)]));
      expect(await holds(leaseId)).toEqual([["posted", "30"]]);
    } finally {
      await locker.query("commit");
      locker.release();
    }
    expect(await state(leaseId)).toMatchObject({ lease_posted: "30", seen_posted: "30" });
  });

  /** A second lease of the live process on the account of `userId`, opened and not synced yet. */
  const secondLease = async (userId: string) => {
    const leaseId = crypto.randomUUID();
    await openLease(db.pool, { leaseId, userId, kind: KIND, period: PERIOD, base: 1000n, baseRevision: 0n, instanceId: live.id });
    return leaseId;
  };
  /** Holds the lease or account row `FOR UPDATE` in a transaction of its own until `release()`. */
  const lockRow = async (table: "quota_leases" | "quota_accounts", id: string) => {
    const locker = await db.pool.connect();
    await locker.query("begin");
    await locker.query(`select 1 from ${table} where id = $1 for update`, [id]);
    return async () => {
      await locker.query("commit");
      locker.release();
    };
  };

  it("a give-back commits on the lease row while the account row is locked; another lease's full sync gathers it", async () => {
    const { userId, leaseId, accountId } = await opened();
    const release = await lockRow("quota_accounts", accountId);
    try {
      // What another process asked for (give-back.ts): 200 of the 325 leased, with a charge of 30 posted beside it.
      await syncLease(db.pool, { ...postOnly(leaseId, 2, 30n, [resolution(30n)]), giveBack: 200n });
    } finally {
      await release();
    }
    // The account row is as the grant left it; the view shows the 200 free already, the reconciliation agrees.
    expect(await state(leaseId)).toEqual({
      amount: "95",
      lease_posted: "30",
      status: "pending",
      posted: "0",
      pending: "325",
      seen_posted: "30",
      seen_pending: "95",
    });
    expect((await leaseRow(leaseId)).returned).toBe("200");
    expect(await reconcileLedger(db.pool)).toEqual([]);
    // Another lease needs 800: 1000 - 30 posted - 95 leased leaves 875, which it can have only with the 200 gathered.
    const other = await secondLease(userId);
    const reply = await syncLease(db.pool, { ...fullSyncOf(other, 1, live.id), need: 800n, headroom: 0n });
    expect(reply).toMatchObject({ granted: 800n, pending: 925n });
    expect((await leaseRow(leaseId)).returned).toBe("0");
    expect(await state(leaseId)).toMatchObject({ amount: "95", pending: "925", seen_pending: "895" });
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("a full sync skips a lease row another statement holds, and never waits for it, rather than gather its give-back", async () => {
    const { userId, leaseId } = await opened();
    await syncLease(db.pool, { ...postOnly(leaseId, 2, 0n, []), giveBack: 300n });
    const other = await secondLease(userId);
    const release = await lockRow("quota_leases", leaseId);
    try {
      // 1000 - 325 leased: 675 without the 300 given back, which sit on the locked row.
      expect(await syncLease(db.pool, { ...fullSyncOf(other, 1, live.id), need: 800n, headroom: 0n })).toMatchObject({ granted: 675n });
    } finally {
      await release();
    }
    expect((await leaseRow(leaseId)).returned).toBe("300");
    expect(await reconcileLedger(db.pool)).toEqual([]);
    // The lease's own next full sync gathers them: granted what it asks for out of 300, and pending 25 + 675 + 100.
    expect(await syncLease(db.pool, { ...fullSyncOf(leaseId, 3, live.id), need: 100n, headroom: 0n })).toMatchObject({
      granted: 100n,
      pending: 800n,
    });
    expect((await leaseRow(leaseId)).returned).toBe("0");
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("the expiry of a lease, and a direct post, return what it gave back and nobody gathered", async () => {
    const { rows } = await db.pool.query<{ id: string }>("insert into gateway_instances default values returning id");
    const dying = rows[0]!.id;
    const expiring = await opened({ instanceId: dying });
    await syncLease(db.pool, { ...postOnly(expiring.leaseId, 2, 0n, [], dying), giveBack: 100n });
    await db.pool.query("update gateway_instances set last_seen_at = now() - interval '2 hours' where id = $1", [dying]);
    expect(await expireRows(db.pool, 3600, fixture.clock.now())).toEqual({ fenced: 1, leases: 1, durable: 0 });
    expect(await state(expiring.leaseId)).toMatchObject({ status: "expired", pending: "0", seen_pending: "0" });
    expect((await leaseRow(expiring.leaseId)).returned).toBe("0");

    const direct = await opened();
    await syncLease(db.pool, { ...postOnly(direct.leaseId, 2, 0n, []), giveBack: 100n });
    await directPost(db.pool, direct.leaseId, direct.accountId, live.id, [], false);
    expect(await state(direct.leaseId)).toMatchObject({ status: "expired", pending: "0", seen_pending: "0" });
    expect((await leaseRow(direct.leaseId)).returned).toBe("0");
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("deleting a user deletes every hold of their accounts, a request's and a durable one", async () => {
    const { userId, leaseId, accountId, key } = await opened();
    await syncLease(db.pool, postOnly(leaseId, 2, 30n, [resolution(30n)]));
    const durable = { ...key, id: crypto.randomUUID(), base: null, baseRevision: 0n, reference: "video:fold-delete" };
    expect(await reserveDurableRow(db.pool, { ...durable, amount: 50n, expiresAt: new Date(Date.now() + 60_000) })).toMatchObject({
      inserted: true,
    });
    const count = async () =>
      (await db.pool.query<{ n: number }>("select count(*)::int as n from quota_holds where account_id = $1", [accountId])).rows[0]!.n;
    expect(await count()).toBe(2);
    await db.pool.query("delete from users where id = $1", [userId]);
    expect(await count()).toBe(0);
  });

  it("the expiry of a fenced process's lease folds its posted units", async () => {
    // A process of our own (no heartbeat timer), so that its fence and its lease's expiry are the test's to cause.
    const { rows } = await db.pool.query<{ id: string }>("insert into gateway_instances default values returning id");
    const dying = rows[0]!.id;
    const { userId, leaseId, accountId } = await opened({ instanceId: dying });
    // Another lease of the live process on the same account, so that the expiry must return exactly one lease's units.
    const survivor = crypto.randomUUID();
    const opening = { leaseId: survivor, userId, kind: KIND, period: PERIOD, base: 1000n, baseRevision: 0n, instanceId: live.id };
    await openLease(db.pool, opening);
    expect(await syncLease(db.pool, fullSyncOf(survivor, 1, live.id))).toMatchObject({ granted: 100n + 575n / 4n });
    await syncLease(db.pool, postOnly(leaseId, 2, 60n, [resolution(60n)], dying));
    await syncLease(db.pool, postOnly(leaseId, 3, 30n, [resolution(30n)], dying));
    expect(await state(leaseId)).toMatchObject({ amount: "235", lease_posted: "90", posted: "0", pending: "568" });
    // Silent for two hours: the expiry's own first step fences it, then its lease expires.
    await db.pool.query("update gateway_instances set last_seen_at = now() - interval '2 hours' where id = $1", [dying]);
    expect(await expireRows(db.pool, 3600, fixture.clock.now())).toEqual({ fenced: 1, leases: 1, durable: 0 });
    // Posted += 90; pending 568 - 235 (its amount) - 90 (its posted) = the survivor's 243.
    expect(await state(leaseId)).toEqual({
      amount: "235",
      lease_posted: "0",
      status: "expired",
      posted: "90",
      pending: "243",
      seen_posted: "90",
      seen_pending: "243",
    });
    expect((await leaseRow(survivor)).status).toBe("pending");
    expect(await reconcileLedger(db.pool)).toEqual([]);
    // A late post-only sync on the ended lease posts its whole charge on the account row; nothing stays on the lease.
    const updates = await accountUpdates(accountId);
    await syncLease(db.pool, postOnly(leaseId, 4, 15n, [resolution(15n)], dying));
    expect(await accountUpdates(accountId)).toBe(updates + 1);
    expect(await state(leaseId)).toMatchObject({ lease_posted: "0", posted: "105", pending: "243", seen_posted: "105" });
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("a direct post folds the lease's posted units and posts its own resolutions, once", async () => {
    const { leaseId, accountId } = await opened();
    await syncLease(db.pool, postOnly(leaseId, 2, 60n, [resolution(60n)]));
    expect(await state(leaseId)).toMatchObject({ amount: "265", lease_posted: "60", posted: "0", pending: "325" });
    const resolutions = [resolution(25n, 30n), resolution(null, 10n)];
    await directPost(db.pool, leaseId, accountId, live.id, resolutions, false);
    // Posted 0 + 60 folded + 25 of its own; pending 325 - 265 (its amount) - 60 (its posted).
    expect(await state(leaseId)).toEqual({
      amount: "265",
      lease_posted: "0",
      status: "expired",
      posted: "85",
      pending: "0",
      seen_posted: "85",
      seen_pending: "0",
    });
    expect(await holds(leaseId)).toEqual([
      ["posted", "60"],
      ["posted", "25"],
      ["voided", null],
    ]);
    expect(await reconcileLedger(db.pool)).toEqual([]);
    // Sent again after a lost reply: the lease ended and the holds exist, so nothing is booked twice. (The statement
    // rewrites the account row with the same figures, so its updated_at moves: only the figures are compared.)
    const figures = "credits, credits_revision, restored, debits_posted, debits_pending";
    const [account, lease] = [await accountRow(accountId, figures), await leaseRow(leaseId)];
    await directPost(db.pool, leaseId, accountId, live.id, resolutions, false);
    expect(await accountRow(accountId, figures)).toEqual(account);
    expect(await leaseRow(leaseId)).toEqual(lease);
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("a refund of a charge still unfolded on its lease folds the lease first, and a retry changes nothing", async () => {
    const { leaseId, accountId } = await opened();
    const [refunded, kept] = [resolution(60n), resolution(40n)];
    await syncLease(db.pool, postOnly(leaseId, 2, 100n, [refunded, kept]));
    // The account row has posted none of the 60 given back: subtracting it alone would break debits_posted >= 0.
    expect(await state(leaseId)).toMatchObject({ amount: "225", lease_posted: "100", posted: "0", pending: "325" });
    expect(await refund(db.pool, [refunded])).toBe(1);
    // Posted 0 + 100 folded - 60 given back; pending 325 - 100 folded. The lease keeps its free units.
    expect(await state(leaseId)).toEqual({
      amount: "225",
      lease_posted: "0",
      status: "pending",
      posted: "40",
      pending: "225",
      seen_posted: "40",
      seen_pending: "225",
    });
    expect(await holds(leaseId)).toEqual([
      ["voided", null],
      ["posted", "40"],
    ]);
    expect(await reconcileLedger(db.pool)).toEqual([]);
    // The same refund again (its reply was lost): the hold is voided already, so neither row moves.
    const [account, lease] = [await accountRow(accountId), await leaseRow(leaseId)];
    expect(await refund(db.pool, [refunded])).toBe(0);
    expect(await accountRow(accountId)).toEqual(account);
    expect(await leaseRow(leaseId)).toEqual(lease);
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("readAccount and a restoration up to what was spent count the unfolded posts; a durable refusal's sum is exact", async () => {
    const { leaseId, accountId, key } = await opened();
    // 60 stay on the lease, the overshoot of 10 reaches the account row.
    await syncLease(db.pool, postOnly(leaseId, 2, 60n, [resolution(70n, 60n)]));
    expect(await state(leaseId)).toMatchObject({ lease_posted: "60", posted: "10", pending: "325" });
    expect(await readAccount(db.pool, key)).toEqual({ id: accountId, credits: 1000n, restored: 0n, posted: 70n, pending: 265n });
    // One unit more than is free (1000 - 70 - 265): refused; its figures are the account row's, whose sum is exact.
    const durable = { ...key, id: crypto.randomUUID(), base: null, baseRevision: 0n, reference: "req_durable" };
    expect(await reserveDurableRow(db.pool, { ...durable, amount: 666n, expiresAt: new Date(Date.now() + 60_000) })).toEqual({
      account: "found",
      accountId,
      inserted: false,
      allowance: 1000n,
      posted: 10n,
      pending: 325n,
    });
    // Everything spent comes back (70), not only what the account row has posted (10).
    const restoration = { ...key, amount: 1000n, upToSpent: true, source: "lease-fold-test" };
    expect(await restoreRow(db.pool, { ...restoration, reference: crypto.randomUUID() })).toEqual({
      account: "found",
      accountId,
      applied: 70n,
    });
    expect(await readAccount(db.pool, key)).toEqual({ id: accountId, credits: 1000n, restored: 70n, posted: 70n, pending: 265n });
    // Nothing spent is left unrestored: another restoration up to spent gives nothing.
    expect(await restoreRow(db.pool, { ...restoration, reference: crypto.randomUUID() })).toMatchObject({ applied: 0n });
    expect(await state(leaseId)).toMatchObject({ lease_posted: "60", seen_posted: "70", seen_pending: "265" });
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("a reserve reset restores the unfolded posts, and a reseller credit's reply counts them", async () => {
    const { userId, leaseId, key } = await opened();
    await syncLease(db.pool, postOnly(leaseId, 2, 60n, [resolution(70n, 60n)]));
    // The use restores what was spent, read under the day's lock: 70, of which only 10 is on the account row.
    const client = await db.pool.connect();
    try {
      await client.query("begin");
      const use = { userId, id: crypto.randomUUID(), day: PERIOD, weeklyBase: 1n, baseRevision: 0n, trigger: "manual" as const };
      expect(await useResetIn(client, { ...use, nowIso: new Date().toISOString() })).toMatchObject({ outcome: "used", restored: 70n });
      await client.query("commit");
    } finally {
      client.release();
    }
    expect(await readAccount(db.pool, key)).toMatchObject({ restored: 70n, posted: 70n, pending: 265n });
    expect(await reconcileLedger(db.pool)).toEqual([]);
    // A reseller balance credited 1000, leased and posted 60 that stay on the lease: the next credit's reply sees them.
    const reseller = { kind: "reseller_usd", period: "balance" };
    await creditResellerRow(db.pool, userId, 1000n, "first", reseller);
    const balance = await opened({ userId, ...reseller, base: null });
    await syncLease(db.pool, postOnly(balance.leaseId, 2, 60n, [resolution(60n)]));
    expect(await state(balance.leaseId)).toMatchObject({ lease_posted: "60", posted: "0", pending: "325" });
    expect(await creditResellerRow(db.pool, userId, 500n, "second", reseller)).toEqual({
      id: balance.accountId,
      credits: 1500n,
      restored: 0n,
      posted: 60n,
      pending: 265n,
    });
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("an automatic reset counts what another lease gave back and no sync gathered yet as free: not needed", async () => {
    const { userId, leaseId } = await opened();
    await db.pool.query("update users set auto_reset_enabled = true where id = $1", [userId]);
    // Another lease takes 600 (its headroom stops at the threshold): 75 left on the row, under it.
    const other = await secondLease(userId);
    expect(await syncLease(db.pool, { ...fullSyncOf(other, 1, live.id), need: 600n, headroom: 400n })).toMatchObject({ granted: 600n });
    // The first lease gives back 200 on request: 275 are free, though the row still counts them as pending.
    await syncLease(db.pool, { ...postOnly(leaseId, 2, 0n, []), giveBack: 200n });
    const client = await db.pool.connect();
    try {
      await client.query("begin");
      const use = { userId, id: crypto.randomUUID(), day: PERIOD, weeklyBase: 1n, baseRevision: 0n, trigger: "automatic" as const };
      const automatic = { ownFree: 0n, need: 50n, threshold: AUTO_RESET_THRESHOLD, posting: 0n };
      expect(await useResetIn(client, { ...use, nowIso: new Date().toISOString(), automatic })).toEqual({ outcome: "not_needed" });
      await client.query("commit");
    } finally {
      client.release();
    }
  });

  // A statement that waits for the account's lock re-reads that row only: if it read the leases' unfolded posts in
  // the same statement, a fold committed while it waited would be counted twice (once on the row, once on the lease).
  for (const reader of ["restoration up to spent", "reserve reset"] as const) {
    it(`a ${reader} waiting on the account behind a full sync's fold counts the folded units once`, async () => {
      const { userId, leaseId, key } = await opened();
      await syncLease(db.pool, postOnly(leaseId, 2, 60n, [resolution(60n)]));
      const folding = await db.pool.connect();
      let read: Promise<unknown> | undefined;
      try {
        await folding.query("begin");
        // A full sync asking for nothing: it folds the 60 and holds the account row until its transaction commits.
        await syncLease(folding, Object.assign(fullSyncOf(leaseId, 3, live.id), { need: 0n, headroom: 0n }));
        read =
          reader === "reserve reset"
            ? (async () => {
                const client = await db.pool.connect();
                try {
                  await client.query("begin");
                  const use = {
                    userId,
                    id: crypto.randomUUID(),
                    day: PERIOD,
                    weeklyBase: 1n,
                    baseRevision: 0n,
                    trigger: "manual" as const,
                  };
                  const outcome = await useResetIn(client, { ...use, nowIso: new Date().toISOString() });
                  await client.query("commit");
                  return outcome;
                } finally {
                  client.release();
                }
              })()
            : restoreRow(db.pool, { ...key, amount: 1000n, upToSpent: true, source: "lease-fold-race", reference: crypto.randomUUID() });
        const waiting = "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()";
        await expect.poll(async () => (await db.pool.query<{ n: number }>(waiting)).rows[0]!.n, { timeout: 30_000 }).toBeGreaterThan(0);
      } finally {
        await folding.query("commit");
        folding.release();
      }
      const outcome = await read;
      expect(outcome).toMatchObject(reader === "reserve reset" ? { outcome: "used", restored: 60n } : { applied: 60n });
      expect(await readAccount(db.pool, key)).toMatchObject({ restored: 60n, posted: 60n, pending: 265n });
      expect(await reconcileLedger(db.pool)).toEqual([]);
    });
  }

  it("the reconciliation catches a lease whose posted units were tampered with", async () => {
    const { leaseId, accountId } = await opened();
    await syncLease(db.pool, postOnly(leaseId, 2, 60n, [resolution(60n)]));
    expect(await reconcileLedger(db.pool)).toEqual([]);
    await db.pool.query("update quota_leases set posted = posted + 1 where id = $1", [leaseId]);
    // One unit appears posted that no hold charged, and disappears from what the lease holds.
    expect(await reconcileLedger(db.pool)).toEqual([
      {
        accountId,
        kind: KIND,
        period: PERIOD,
        posted: { account: 61n, rows: 60n },
        pending: { account: 264n, rows: 265n },
        restored: { account: 0n, rows: 0n },
        credits: null,
      },
    ]);
    // Undone, so the database is left consistent.
    await db.pool.query("update quota_leases set posted = posted - 1 where id = $1", [leaseId]);
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });
});
