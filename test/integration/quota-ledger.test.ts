import { quickAddJob, runOnce } from "graphile-worker";
import { beforeAll, describe, expect, it } from "vitest";
import { taskList } from "../../src/jobs/tasks.js";
import {
  HoldResolvedError,
  nextResetAt,
  registerInstance,
  type Hold,
  type Instance,
  type ManualClock,
  type QuotaLedger,
  type ReserveInput,
} from "../../src/quota/index.js";
import { createServices, type Services } from "../../src/runtime/services.js";
import { createLogger } from "../../src/logger.js";
import type { TestDatabase } from "../helpers/db.js";
import { QUIET_INSTANCE, useLedgerFixture } from "../helpers/ledger-fixture.js";
import { injectAtPool } from "../helpers/sql-faults.js";
import { testConfig } from "../helpers/gateway-app.js";

// Seeded, so a failing concurrency run can be replayed.
function random(seed: number): (max: number) => bigint {
  return (max) => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return BigInt(1 + (seed % max));
  };
}

describe("quota ledger", () => {
  const fixture = useLedgerFixture("quota");
  let db: TestDatabase;
  let ledger: QuotaLedger;
  let live: Instance;
  let clock: ManualClock;
  beforeAll(() => void ({ db, ledger, live, clock } = fixture));
  const newUser = fixture.newUser;
  const accountOf = async (hold: Hold) => {
    const { rows } = await db.pool.query<{ period: string; credits: string; debits_posted: string; debits_pending: string }>(
      "select period, credits, debits_posted, debits_pending from quota_account_balances where id = $1",
      [hold.accountId],
    );
    const row = rows[0]!;
    const [credits, posted, pending] = [row.credits, row.debits_posted, row.debits_pending].map(BigInt);
    return { period: row.period, credits, posted, pending };
  };
  type HoldRow = { status: string; charged: string | null; resolved_at: Date | null; instance_id: string };
  const holdRow = async (id: string) => (await db.pool.query<HoldRow>("select * from quota_holds where id = $1", [id])).rows[0]!;
  const input = (userId: string, amount: bigint, extra: Partial<ReserveInput> = {}): ReserveInput => ({
    kind: "daily_allowance",
    userId,
    amount,
    base: 1000n,
    requestId: "req_test",
    ...extra,
  });
  const daily = (userId: string, base = 1000n) => ({ kind: "daily_allowance" as const, userId, base });
  const hold = async (userId: string, amount: bigint, extra: Partial<ReserveInput> = {}, on = ledger) => {
    const result = await on.reserve(input(userId, amount, extra));
    if (!result.ok) throw new Error(`reserve of ${amount} refused`);
    return result.hold;
  };
  /** The account once every lease has given its free units back: pending is exactly what requests hold. */
  const settledAccount = async (h: Hold, ...ledgers: QuotaLedger[]) => {
    for (const l of ledgers.length > 0 ? ledgers : [ledger]) await l.flush();
    return accountOf(h);
  };
  const second = async () => (await fixture.process()).ledger;

  it("holds within the allowance and refuses what is not covered, with the numbers", async () => {
    const user = await newUser();
    const now = new Date("2026-11-22T10:00:00Z");
    clock.set(now);
    const first = await hold(user, 700n);
    expect(first.amount).toBe(700n);
    // The lease holds the request's 700 and some headroom, never more than the allowance.
    const leased = await accountOf(first);
    expect(leased).toMatchObject({ period: "2026-11-22", credits: 1000n, posted: 0n });
    expect(leased.pending).toBeGreaterThanOrEqual(700n);
    expect(leased.pending).toBeLessThanOrEqual(1000n);
    expect(await settledAccount(first)).toEqual({ period: "2026-11-22", credits: 1000n, posted: 0n, pending: 700n });
    expect(await ledger.reserve(input(user, 400n))).toEqual({
      ok: false,
      allowance: 1000n,
      used: 0n,
      reserved: 700n,
      resetsAt: nextResetAt(now),
    });
    await ledger.release(first.id);
    await expect(ledger.reserve(input(user, 1001n))).resolves.toMatchObject({ ok: false, reserved: 0n });
    await expect(ledger.reserve(input(user, -1n))).rejects.toThrow(RangeError);
  });

  it("settle posts the real charge and frees the remainder; resolving twice has no second effect", async () => {
    const user = await newUser();
    const h = await hold(user, 500n);
    await ledger.settle(h.id, 120n);
    expect(await settledAccount(h)).toMatchObject({ posted: 120n, pending: 0n });
    expect(await holdRow(h.id)).toMatchObject({ status: "posted", amount: "500", charged: "120", resolved_at: expect.any(Date) });
    expect((await ledger.balance(daily(user))).remaining).toBe(880n);
    await expect(ledger.settle(h.id, 120n)).rejects.toBeInstanceOf(HoldResolvedError);
    await expect(ledger.release(h.id)).rejects.toBeInstanceOf(HoldResolvedError);
    expect(await settledAccount(h)).toMatchObject({ posted: 120n, pending: 0n });

    const voided = await hold(user, 300n);
    await ledger.release(voided.id);
    await expect(ledger.release(voided.id)).rejects.toBeInstanceOf(HoldResolvedError);
    await expect(ledger.settle(voided.id, 1n)).rejects.toBeInstanceOf(HoldResolvedError);
    expect(await settledAccount(voided)).toMatchObject({ posted: 120n, pending: 0n });
    expect((await holdRow(voided.id)).status).toBe("voided");
    await expect(ledger.settle(voided.id, -1n)).rejects.toThrow(RangeError);
  });

  it("settles a hold once when it is resolved several times at once; another process does not know it", async () => {
    const user = await newUser();
    const h = await hold(user, 100n);
    const other = await second();
    const outcomes = await Promise.allSettled([
      ledger.settle(h.id, 40n),
      ledger.settle(h.id, 40n),
      ledger.release(h.id),
      other.settle(h.id, 40n),
    ]);
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
    for (const o of outcomes) if (o.status === "rejected") expect(o.reason).toBeInstanceOf(HoldResolvedError);
    expect(await settledAccount(h)).toMatchObject({ posted: 40n, pending: 0n });
  });

  it("an overshoot takes the balance below zero and refuses even 0-unit holds until the reset", async () => {
    const user = await newUser();
    const now = new Date("2026-11-22T10:00:00Z");
    clock.set(now);
    const h = await hold(user, 900n);
    await ledger.settle(h.id, 1500n);
    expect(await ledger.balance(daily(user))).toMatchObject({ used: 1500n, reserved: 0n, remaining: -500n });
    await expect(ledger.reserve(input(user, 0n))).resolves.toMatchObject({ ok: false, used: 1500n });
    await expect(ledger.reserve(input(user, 1n))).resolves.toMatchObject({ ok: false });
    // The next day starts from the full allowance.
    clock.set(nextResetAt(now));
    await hold(user, 1000n).then((next) => ledger.release(next.id));

    // Exactly spent is not overshot: free requests still pass.
    const spent = await newUser();
    await ledger.settle((await hold(spent, 1000n)).id, 1000n);
    await ledger.release((await hold(spent, 0n)).id);
  });

  it("a plan change applies at once, up and down", async () => {
    const user = await newUser();
    const h = await hold(user, 600n);
    await expect(ledger.reserve(input(user, 600n))).resolves.toMatchObject({ ok: false });
    const upgraded = await hold(user, 600n, { base: 2000n });
    expect(await settledAccount(upgraded)).toMatchObject({ credits: 2000n, pending: 1200n });
    expect((await ledger.balance(daily(user, 2000n))).remaining).toBe(800n);
    await expect(ledger.reserve(input(user, 1n, { base: 1000n }))).resolves.toMatchObject({
      ok: false,
      allowance: 1000n,
      reserved: 1200n,
    });
    await ledger.release(h.id);
    await ledger.release(upgraded.id);
    expect(await settledAccount(h)).toMatchObject({ credits: 1000n, pending: 0n });
  });

  it("a process with an older view of the plan never overwrites a newer one, and never grants on it", async () => {
    const user = await newUser();
    const stale = await second();
    // The plan changed to 1000 (revision 1); the other process's key cache still has the old plan of 5000.
    const fresh = await hold(user, 100n, { base: 1000n, planRevision: 1 });
    const granted: Hold[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await stale.reserve(input(user, 100n, { base: 5000n, planRevision: 0 }));
      if (r.ok) granted.push(r.hold);
    }
    // Its syncs stated 5000 at an older revision: the account kept 1000, and nothing was held above it.
    const account = await settledAccount(fresh, ledger, stale);
    expect(account.credits).toBe(1000n);
    expect(account.pending! + account.posted!).toBeLessThanOrEqual(1000n);
    expect(granted.length).toBeLessThanOrEqual(9);
    // A newer revision applies, whichever process states it.
    await stale.release((await hold(user, 10n, { base: 2000n, planRevision: 2 }, stale)).id);
    expect((await settledAccount(fresh, ledger, stale)).credits).toBe(2000n);
    await ledger.release(fresh.id);
    for (const h of granted) await stale.release(h.id);
  });

  it("the day ends at 00:00 UTC; a hold posts to the day it was made on", async () => {
    const user = await newUser();
    const late = new Date("2026-11-22T23:59:59.999Z");
    const early = new Date("2026-11-23T00:00:00.000Z");
    clock.set(late);
    const before = await hold(user, 1000n);
    clock.set(early);
    const after = await hold(user, 1000n);
    expect(before.accountId).not.toBe(after.accountId);
    expect((await accountOf(before)).period).toBe("2026-11-22");
    expect((await accountOf(after)).period).toBe("2026-11-23");
    await ledger.settle(before.id, 250n);
    expect(await settledAccount(before)).toMatchObject({ posted: 250n, pending: 0n });
    expect(await ledger.balance(daily(user))).toEqual({
      kind: "daily_allowance",
      period: "2026-11-23",
      credits: 1000n,
      restored: 0n,
      used: 0n,
      reserved: 1000n,
      remaining: 0n,
      resetsAt: new Date("2026-11-24T00:00:00Z"),
    });
    await ledger.release(after.id);
    expect(await ledger.balance(daily(await newUser(), 5n))).toMatchObject({ used: 0n, reserved: 0n, remaining: 5n });
  });

  describe("expiry", () => {
    const lastSeen = (id: string, ago: string) =>
      db.pool.query("update gateway_instances set last_seen_at = now() - $2::interval where id = $1", [id, ago]);
    /** A process that thinks it is alive, whose heartbeat the database last saw 91 s ago. */
    const deadProcess = async () => {
      const proc = await fixture.process();
      await lastSeen(proc.instance.id, "91 seconds");
      return proc;
    };
    const leaseRows = async (accountId: string) =>
      (
        await db.pool.query<{ instance_id: string; status: string; amount: string }>("select * from quota_leases where account_id = $1", [
          accountId,
        ])
      ).rows;

    it("expires the leases of a silent or stopped process, keeps live ones; a late settle still posts", async () => {
      const user = await newUser();
      const { ledger: silentLedger, instance: dead } = await deadProcess();
      const { ledger: stoppedLedger, instance: stopped } = await fixture.process();
      const kept = await hold(user, 100n);
      const silent = await hold(user, 200n, {}, silentLedger);
      const orphan = await hold(user, 50n, {}, stoppedLedger);
      await stopped.stop();
      await Promise.all([ledger, silentLedger, stoppedLedger].map((l) => l.flush()));
      expect(await accountOf(kept)).toMatchObject({ pending: 350n });

      // The silent one is fenced first; the stopped one has no row left.
      expect(await ledger.expire()).toEqual({ fenced: 1, leases: 2, durable: 0 });
      expect(await ledger.expire()).toEqual({ fenced: 0, leases: 0, durable: 0 });
      const leases = await leaseRows(kept.accountId);
      expect(
        leases
          .filter((l) => l.status === "expired")
          .map((l) => l.instance_id)
          .sort(),
      ).toEqual([dead.id, stopped.id].sort());
      expect(leases.filter((l) => l.status === "pending").map((l) => l.instance_id)).toEqual([live.id]);
      expect(await accountOf(kept)).toMatchObject({ posted: 0n, pending: 100n });

      // The presumed-dead process was alive after all: its charge posts, its units were already returned.
      await silentLedger.settle(silent.id, 180n);
      expect(await accountOf(kept)).toMatchObject({ posted: 180n, pending: 100n });
      expect(await holdRow(silent.id)).toMatchObject({ status: "posted", charged: "180" });
      await stoppedLedger.release(orphan.id);
      expect(await accountOf(kept)).toMatchObject({ posted: 180n, pending: 100n });
      // A new reservation of that process takes a new lease.
      const again = await hold(user, 10n, {}, silentLedger);
      await silentLedger.release(again.id);
      await ledger.release(kept.id);
      expect(await settledAccount(kept, ledger, silentLedger)).toMatchObject({ posted: 180n, pending: 0n });
      expect(dead.id).not.toBe(live.id);
    });

    it("settles racing an expiry subtract each pending amount exactly once", async () => {
      const user = await newUser();
      const { ledger: deadLedger } = await deadProcess();
      const holds = await Promise.all(Array.from({ length: 200 }, () => hold(user, 5n, {}, deadLedger)));
      // Expiry runs interleaved with the settles, from both processes.
      await Promise.all(
        holds.flatMap((h, i) => {
          const on = i % 2 ? ledger : deadLedger;
          return i % 20 === 0 ? [on.expire(), deadLedger.settle(h.id, 3n)] : [deadLedger.settle(h.id, 3n)];
        }),
      );
      await ledger.expire();
      expect(await accountOf(holds[0]!)).toMatchObject({ posted: 600n, pending: 0n });
    });

    it("runs as the expire_ledger task and forgets processes silent for a day", async () => {
      const logger = createLogger("silent");
      const services: Services = await createServices({ config: testConfig(), pool: db.pool, logger, env: {}, serving: false });
      const user = await newUser();
      const { ledger: deadLedger, instance: dead } = await deadProcess();
      const h = await hold(user, 40n, {}, deadLedger);
      await lastSeen(dead.id, "25 hours");
      const tasks = taskList({
        sessions: services.auth.sessions,
        ledger,
        pool: db.pool,
        retention: services.config.retention,
        partitionsAheadDays: services.config.analytics.partitions_ahead_days,
        transfers: services.transfers,
      });
      await quickAddJob({ pgPool: db.pool }, "expire_ledger", {});
      await runOnce({ pgPool: db.pool, taskList: tasks });
      expect((await leaseRows(h.accountId)).map((l) => l.status)).toEqual(["expired"]);
      expect(await accountOf(h)).toMatchObject({ pending: 0n });
      const left = await db.pool.query("select id from gateway_instances where id = $1", [dead.id]);
      expect(left.rowCount).toBe(0);
      // Completion is not awaited by runOnce: poll for the job's deletion, which proves it did not fail.
      const jobsLeft = async () => (await db.pool.query("select count(*)::int as n from graphile_worker.jobs")).rows[0].n;
      await expect.poll(jobsLeft).toBe(0);
      await services.close();
    });

    it("a process stalled past the timeout admits nothing from leases the others expired meanwhile", async () => {
      const user = await newUser();
      // Fresh for 100 ms after each acknowledged beat; its own timer would beat only after an hour (a stall).
      const stalled = await registerInstance(db.pool, { heartbeatMs: 3_600_000, timeoutMs: 3_600_100 });
      const { ledger: stalledLedger } = await fixture.process({ instance: stalled });
      const first = await hold(user, 100n, {}, stalledLedger);
      // Its lease holds free units beyond the request's 100.
      expect((await accountOf(first)).pending).toBeGreaterThan(100n);
      await new Promise((resolve) => setTimeout(resolve, 150));
      // The others presume it dead: its lease expires, and another process takes everything that is left.
      await lastSeen(stalled.id, "2 hours");
      expect((await ledger.expire()).leases).toBe(1);
      const rest = await hold(user, 1000n);
      // Waking up, it must not admit from the free units it remembers: the database says they are gone.
      await expect(stalledLedger.reserve(input(user, 10n))).resolves.toMatchObject({
        ok: false,
        allowance: 1000n,
        used: 0n,
        reserved: 1000n,
      });
      // Asking renewed its heartbeat: it is alive again, and its late settlement still posts.
      const { rows } = await db.pool.query(
        "select now() - last_seen_at < interval '1 minute' as renewed from gateway_instances where id = $1",
        [stalled.id],
      );
      expect(rows[0].renewed).toBe(true);
      expect(stalled.fresh()).toBe(true);
      await stalledLedger.settle(first.id, 100n);
      await ledger.release(rest.id);
      expect(await settledAccount(first, ledger, stalledLedger)).toMatchObject({ posted: 100n, pending: 0n });
      await stalled.stop();
    });

    it("a fenced process admits nothing from its leases, even before an expiry returned their units", async () => {
      const user = await newUser();
      const stalled = await registerInstance(db.pool, { heartbeatMs: 3_600_000, timeoutMs: 3_600_100 });
      const { ledger: stalledLedger } = await fixture.process({ instance: stalled });
      const first = await hold(user, 100n, {}, stalledLedger);
      await new Promise((resolve) => setTimeout(resolve, 150));
      // An expiry's first statement fenced the process; the statements returning its leases' units have not run.
      await db.pool.query("update gateway_instances set fenced_at = now() where id = $1", [stalled.id]);
      const fencedId = stalled.id;
      const leaseOf = async () =>
        (await db.pool.query("select amount::text, last_grant::text, status from quota_leases where instance_id = $1", [fencedId])).rows;
      const [before] = await leaseOf();
      // Its lease still holds free units, but a fenced process may not draw on them (the expiry will hand them out):
      // it registers anew, and what it admits comes from a new lease, out of what is free in the account.
      const second = await hold(user, 10n, {}, stalledLedger);
      expect(stalled.id).not.toBe(fencedId);
      expect(await leaseOf()).toEqual([{ amount: before.amount, last_grant: "0", status: "pending" }]);
      await stalledLedger.settle(second.id, 10n);
      await stalledLedger.flush();
      expect((await holdRow(second.id)).instance_id).toBe(stalled.id);
      await ledger.expire();
      expect((await leaseOf()).map((l) => l.status)).toEqual(["expired"]);
      // The old lease's late settlement hears that its process id is fenced: that is over, the process stays as it is.
      const renewedId = stalled.id;
      await stalledLedger.settle(first.id, 100n);
      expect(await settledAccount(first, ledger, stalledLedger)).toMatchObject({ posted: 110n, pending: 0n });
      expect(stalled.id).toBe(renewedId);
      await stalled.stop();
    });

    it("every serving process expires dead processes' leases itself, with no background worker", async () => {
      const logger = createLogger("silent");
      const config = testConfig({
        quota: { expiry_sweep_seconds: 1, instance_timeout_seconds: 3, heartbeat_seconds: 1, lease_idle_ms: 1000 },
      });
      const services: Services = await createServices({ config, pool: db.pool, logger, env: {}, serving: true });
      try {
        const user = await newUser();
        const { ledger: deadLedger, instance: dead } = await deadProcess();
        const h = await hold(user, 40n, {}, deadLedger);
        // Every lease of the dead process expires (a sweep between its lease's open and first sync makes it
        // open a second one, which expires in turn).
        const statuses = async () => new Set((await leaseRows(h.accountId)).map((l) => l.status));
        await expect.poll(statuses, { timeout: 10_000, interval: 100 }).toEqual(new Set(["expired"]));
        expect(await accountOf(h)).toMatchObject({ pending: 0n });
        expect(dead.id).not.toBe(live.id);
      } finally {
        await services.close();
      }
    });

    it("heartbeats keep a process alive; a process whose row was forgotten registers again under a new id; stop() ends it", async () => {
      const instance = await registerInstance(db.pool, { heartbeatMs: 20, timeoutMs: 60 });
      const forgotten = instance.id;
      const seen = async () => {
        const sql = "select now() - last_seen_at < interval '5 seconds' as fresh from gateway_instances where id = $1";
        return (await db.pool.query(sql, [instance.id])).rows[0]?.fresh;
      };
      await expect.poll(seen).toBe(true);
      await db.pool.query("delete from gateway_instances where id = $1", [instance.id]);
      // Its next beat finds no row: the process counts as fenced (its leases may have been expired) and never
      // admits under that id again.
      await expect.poll(() => instance.id !== forgotten).toBe(true);
      await expect.poll(seen).toBe(true);
      await instance.stop();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await seen()).toBeUndefined();
    });

    it("a beat of the fenced id that answers after the process registered again does not fence the new id", async () => {
      const fencedIds: string[] = [];
      const instance = await registerInstance(db.pool, { heartbeatMs: 20, timeoutMs: 3_600_000, onFenced: (id) => fencedIds.push(id) });
      const old = instance.id;
      const lock = await db.pool.connect();
      try {
        // The next beat of the old id waits on its row.
        await lock.query("begin");
        await lock.query("select 1 from gateway_instances where id = $1 for update", [old]);
        const waiting = "select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'";
        const waiters = async () => (await db.pool.query<{ n: number }>(waiting)).rows[0]!.n;
        await expect.poll(waiters).toBe(1);
        // A sync answers that the process was fenced: it registers again; then the waiting beat finds its row fenced.
        instance.fenced();
        const renewed = await instance.ready();
        expect(renewed).not.toBe(old);
        await lock.query("update gateway_instances set fenced_at = now() where id = $1", [old]);
        await lock.query("commit");
        await expect.poll(waiters).toBe(0);
        // The stale beat's answer is handled within a turn of its reply; a wrong fence would register a third id.
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(fencedIds).toEqual([old]);
        expect(instance.id).toBe(renewed);
        expect(instance.fresh()).toBe(true);
      } finally {
        lock.release();
        await instance.stop();
      }
    });

    it("a registration after a fence that fails is retried, whatever the error, until it succeeds", async () => {
      const errors: string[] = [];
      const instance = await registerInstance(db.pool, { ...QUIET_INSTANCE, onError: (err) => errors.push(err.message) });
      const fault = injectAtPool(db.pool, {
        code: "42501",
        forMs: 30_000,
        times: 2,
        when: (s) => /insert into gateway_instances/.test(s.text),
      });
      await fault.applied;
      const old = instance.id;
      try {
        instance.fenced();
        const renewed = await instance.ready();
        expect(renewed).not.toBe(old);
        expect(fault.stats().refused).toBe(2);
        expect(errors).toEqual(["injected SQLSTATE 42501", "injected SQLSTATE 42501"]);
      } finally {
        await instance.stop();
      }
    });
  });

  describe("concurrency across two processes", () => {
    it("never holds more than the allowance under 200 concurrent reserves, and books every settle exactly", async () => {
      const rand = random(20_261_122);
      const allowance = 10_000n;
      const user = await newUser();
      const ledgers = [ledger, await second()];
      // A hold is resolved by the process that made it.
      type Held = { hold: Hold; on: QuotaLedger };
      const reserveMany = async (n: number): Promise<Held[]> => {
        const results = await Promise.all(
          Array.from({ length: n }, async (_, i) => {
            const on = ledgers[i % 2]!;
            const result = await on.reserve(input(user, rand(200), { base: allowance }));
            return result.ok ? [{ hold: result.hold, on }] : [];
          }),
        );
        const held = results.flat();
        // What the leases hold in the database covers the admitted requests and never exceeds the allowance.
        const { pending, posted } = await accountOf(held[0]!.hold);
        expect(pending! + posted!).toBeLessThanOrEqual(allowance);
        return held;
      };
      const granted = await reserveMany(200);
      const held = granted.reduce((sum, h) => sum + h.hold.amount, 0n);
      expect(held).toBeLessThanOrEqual(allowance);

      // Resolve every hold while a second wave reserves, then resolve that wave too.
      let posted = 0n;
      const resolve = (holds: Held[]) =>
        holds.map(({ hold: h, on }, i) => {
          if (i % 5 === 0) return on.release(h.id);
          const charged = rand(Number(h.amount) + 1) - 1n;
          posted += charged;
          return on.settle(h.id, charged);
        });
      const [, wave] = await Promise.all([Promise.all(resolve(granted)), reserveMany(100)]);
      await Promise.all(resolve(wave));

      const account = await settledAccount(granted[0]!.hold, ...ledgers);
      const { rows } = await db.pool.query<{ status: string; n: number; charged: string | null }>(
        "select status, count(*)::int as n, sum(charged) as charged from quota_holds where account_id = $1 group by status",
        [granted[0]!.hold.accountId],
      );
      const byStatus = Object.fromEntries(rows.map((r) => [r.status, r]));
      expect(byStatus.pending).toBeUndefined();
      expect(BigInt(byStatus.posted!.charged!)).toBe(posted);
      expect(account).toMatchObject({ posted, pending: 0n });
      expect(posted).toBeLessThanOrEqual(allowance);
      const secondWave = byStatus.posted!.n + byStatus.voided!.n - granted.length;
      console.info(`quota concurrency: ${granted.length}/200 held (${held} units), then ${secondWave}/100; ${posted}/${allowance} posted`);
    });

    it("grants exactly what fits when every reserve races for the same remainder", async () => {
      const user = await newUser();
      const ledgers = [ledger, await second()];
      const results = await Promise.all(
        Array.from({ length: 50 }, async (_, i) => ({ on: ledgers[i % 2]!, result: await ledgers[i % 2]!.reserve(input(user, 100n)) })),
      );
      const granted = results.flatMap(({ on, result }) => (result.ok ? [{ on, hold: result.hold }] : []));
      expect(granted).toHaveLength(10);
      expect(await settledAccount(granted[0]!.hold, ...ledgers)).toMatchObject({ posted: 0n, pending: 1000n });
      await Promise.all(granted.map(({ on, hold: h }) => on.settle(h.id, 100n)));
      expect(await settledAccount(granted[0]!.hold, ...ledgers)).toMatchObject({ posted: 1000n, pending: 0n });
    });
  });
});
