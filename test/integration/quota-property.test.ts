import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { createPool, type Pool } from "../../src/db/pool.js";
import {
  createQuotaLedger,
  HoldResolvedError,
  ManualClock,
  registerInstance,
  utcDay,
  type AccountKind,
  type Instance,
  type QuotaLedger,
} from "../../src/quota/index.js";
import { reconcileLedger } from "../../src/quota/reconcile-sql.js";
import { completeRows, sendRows } from "../../src/transfers/transfers-sql.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { QUIET_INSTANCE } from "../helpers/ledger-fixture.js";
import { NO_LIMITS } from "../helpers/transfers.js";

// A property test of the ledger (docs/billing.md): a seeded random sequence of operations on real PostgreSQL,
// by two gateway processes plus a third that gets killed and replaced now and then, or paused past its timeout
// (a zombie: fenced by the expiry while it keeps reserving, settling and syncing), across both account kinds,
// with the clock moving across days, the expiry running among the other operations, plans raised (with one
// process sometimes stating the previous plan, as a stale key cache does), a user on automatic resets, and token
// transfers sent and completed. A model of what the test did checks after every operation that no account has
// admitted more than it allows (credits + restored): what every process holds, in memory included, plus the part of
// each posted charge its hold covered. The documented overshoot is per hold and never carried over: a charge above
// its hold counts only up to the hold, and a late charge of a hold whose units went back (expired, or its process
// fenced) does not count. At the end every account's row reconciles exactly with the holds, leases and
// restorations tables and with the model.
//
// What it catches, checked by breaking the ledger on purpose (seed 12345): a lease sync granting one unit more
// than it books fails it. Faults whose harm needs a narrow interleaving are left to targeted tests, which fail on
// them where this model, with its random schedule, passes: a fenced process's sync still granting
// (quota-ledger.test.ts, "a fenced process admits nothing…"), a stale plan revision overwriting a newer one (same
// file, "a process with an older view of the plan…"), a retried heartbeat sync told it was fenced
// (quota-escrow.test.ts, "grants need plus…").
//
// Replay a failure with LEDGER_SEED=<seed> (and LEDGER_OPS=<n> to change the length).

const SEED = Number(process.env.LEDGER_SEED ?? Math.floor(Math.random() * 2 ** 31));
const OPS = Number(process.env.LEDGER_OPS ?? 100_000);
const MAX_HOLD_SECONDS = 600;
const BATCH = 96;

/** mulberry32: small, fast, and the same sequence for the same seed everywhere. */
function prng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return {
    next,
    int: (max: number) => Math.floor(next() * max),
    big: (max: number) => BigInt(Math.floor(next() * max)),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
  };
}

interface Proc {
  name: string;
  ledger: QuotaLedger;
  instance: Instance;
}

/** What the model knows of one account (kind, user, period). */
interface Account {
  kind: AccountKind;
  userId: string;
  period: string;
  base: bigint;
  /** Reseller credits (committed or on their way: counted when asked for). */
  credited: bigint;
  restored: bigint;
  /** Restorations asked for and not answered yet: at most this much more may be restored. */
  restoring: bigint;
  posted: bigint;
  /**
   * Posted charges up to the hold each was taken against: a charge above its hold, and a late charge of a hold whose
   * units went back (expired, or its process fenced), are the documented per-hold overshoot and do not count here.
   */
  capped: bigint;
  /** Units held by admitted, unresolved, unexpired requests and pending durable holds (pending transfers too). */
  held: bigint;
  /** Its restorations include automatic resets, which the model reads from the database at every barrier. */
  auto: boolean;
}

interface LeaseHold {
  id: string;
  proc: Proc;
  account: Account;
  amount: bigint;
  reservedAtMs: number;
  expired: boolean;
}

interface DurableHold {
  id: string;
  account: Account;
  amount: bigint;
  expiresAtMs: number;
  state: "pending" | "expired" | "done";
}

interface Transfer {
  id: string;
  sender: Account;
  recipientId: string;
  day: string;
  amount: bigint;
}

/** The weekly resets of the user on automatic resets. */
const WEEKLY_RESETS = 2n;

describe("ledger property", () => {
  let db: TestDatabase;
  const pools: Pool[] = [];
  const instances: Instance[] = [];
  const ledgers: QuotaLedger[] = [];

  afterAll(async () => {
    // Bounded: after a failure a ledger may hold a stuck operation that its close would wait for.
    await Promise.race([Promise.allSettled(ledgers.map((l) => l.close())), new Promise((resolve) => setTimeout(resolve, 10_000))]);
    await Promise.allSettled(instances.map((i) => i.stop()));
    await Promise.allSettled(pools.map((p) => p.end()));
    await db?.drop();
  });

  it(
    `keeps every account within its allowance and reconciles exactly (seed ${SEED}, ${OPS} operations)`,
    { timeout: 600_000 },
    async () => {
      const rand = prng(SEED);
      db = await createTestDatabase();
      const clock = new ManualClock("2026-11-20T22:00:00Z");
      const newPool = () => {
        const pool = createPool(db.url, 8, () => {});
        pools.push(pool);
        return pool;
      };
      const [poolA, poolB] = [db.pool, newPool()];
      // The third process is never fresh (its heartbeat margin is a millisecond): every reservation of it syncs and
      // renews its heartbeat, racing the expiry's fence when it is made a zombie.
      const start = async (name: string, pool: Pool, mortal = false): Promise<Proc> => {
        const instance = await registerInstance(pool, mortal ? { heartbeatMs: 3_600_000, timeoutMs: 3_600_001 } : QUIET_INSTANCE);
        instances.push(instance);
        const ledger = createQuotaLedger(pool, {
          instance,
          clock,
          maxHoldSeconds: MAX_HOLD_SECONDS,
          leaseIdleMs: 60_000,
          // Silent for an hour: a zombie (its heartbeat set two hours back), never the others during a run.
          instanceTimeoutSeconds: 3_600,
        });
        ledgers.push(ledger);
        return { name, ledger, instance };
      };
      const a = await start("a", poolA);
      const b = await start("b", poolB);
      let mortal = await start("c0", poolB, true);
      let deaths = 0;

      interface User {
        id: string;
        base: bigint;
        revision: number;
        /** The plan before its last raise: what a process whose key cache missed the raise still states. */
        previous: { base: bigint; revision: number } | null;
        auto: boolean;
      }
      const users: User[] = [];
      for (let i = 0; i < 3; i++) {
        const { rows } = await db.pool.query<{ id: string }>(
          "insert into users (email, password_hash, plan, auto_reset_enabled) values ($1, 'x', 'free', $2) returning id",
          [`prop-${i}@example.test`, i === 0],
        );
        // Days small enough to run out within a few batches: admission at the allowance's edge is what is tested
        // (with large days a grant that hands out units that do not exist passed unnoticed). The user on automatic
        // resets has the smallest: resets are used over and over.
        const base = BigInt(i === 0 ? 20_000 + rand.int(20_000) : 30_000 + rand.int(50_000));
        users.push({ id: rows[0]!.id, base, revision: 0, previous: null, auto: i === 0 });
      }

      const accounts = new Map<string, Account>();
      const accountOf = (kind: AccountKind, user: User, period = kind === "daily_allowance" ? utcDay(clock.now()) : "balance"): Account => {
        const key = `${kind}/${user.id}/${period}`;
        let account = accounts.get(key);
        if (!account) {
          account = {
            kind,
            userId: user.id,
            period,
            base: kind === "daily_allowance" ? user.base : 0n,
            credited: 0n,
            restored: 0n,
            restoring: 0n,
            posted: 0n,
            capped: 0n,
            held: 0n,
            auto: kind === "daily_allowance" && user.auto,
          };
          accounts.set(key, account);
        }
        return account;
      };
      const capped = (charged: bigint, held: bigint) => (charged < held ? charged : held);
      const allows = (x: Account) => x.base + x.credited + x.restored + x.restoring;
      /** `barrier`: every operation has ended (and automatic restorations were read from the database). */
      const check = (x: Account, what: string, barrier = false) => {
        if (x.auto && !barrier) return;
        if (x.held + x.capped > allows(x)) {
          throw new Error(
            `seed ${SEED}: after ${what}, ${x.kind} of ${x.userId} (${x.period}) holds ${x.held} and posted ${x.capped} within holds, over its allowance ${allows(x)}`,
          );
        }
      };
      const checkAll = (what: string, barrier = false) => {
        for (const x of accounts.values()) check(x, what, barrier);
      };
      /** Restorations the model cannot foresee (automatic resets), as the database has them. */
      const readAutoRestorations = async () => {
        const auto = [...accounts.values()].filter((x) => x.auto);
        if (auto.length === 0) return;
        const { rows } = await db.pool.query<{ user_id: string; period: string; restored: string }>(
          "select user_id::text, period, restored::text from quota_accounts where kind = 'daily_allowance' and user_id = any($1::uuid[])",
          [[...new Set(auto.map((x) => x.userId))]],
        );
        for (const row of rows) {
          const x = accounts.get(`daily_allowance/${row.user_id}/${row.period}`);
          if (x?.auto) x.restored = BigInt(row.restored);
        }
      };

      const holds: LeaseHold[] = [];
      const durables: DurableHold[] = [];
      const transfers: Transfer[] = [];
      const resolved: LeaseHold[] = [];
      const references: string[] = [];
      const counts: Record<string, number> = {};
      const count = (op: string) => void (counts[op] = (counts[op] ?? 0) + 1);
      const take = <T>(items: T[]): T | undefined => (items.length === 0 ? undefined : items.splice(rand.int(items.length), 1)[0]);
      const procs = () => [a, b, mortal];

      // Operations that run concurrently within a batch. Each applies its effect to the model when the ledger
      // could act on it: an admission when the reservation resolves; a release of units when it is asked for
      // (the escrow frees them at once); a raise of the allowance when it is asked for (an upper bound).
      function reserve(): Promise<void> {
        const kind: AccountKind = rand.next() < 0.8 ? "daily_allowance" : "reseller_usd";
        const user = rand.pick(users);
        const proc = rand.pick(procs());
        const account = accountOf(kind, user);
        const amount = rand.big(kind === "daily_allowance" ? 1_000 : 500);
        const reservedAtMs = clock.now().getTime();
        // b's key cache sometimes missed the last plan raise: it states the previous plan, at its older revision.
        const plan = proc === b && user.previous && rand.next() < 0.3 ? user.previous : user;
        count("reserve");
        return proc.ledger
          .reserve({
            kind,
            userId: user.id,
            base: kind === "daily_allowance" ? plan.base : null,
            planRevision: plan.revision,
            amount,
            requestId: "req_prop",
            weeklyResets: kind === "daily_allowance" && user.auto && amount > 0n ? WEEKLY_RESETS : null,
          })
          .then((r) => {
            if (!r.ok) return count("refused");
            account.held += amount;
            holds.push({ id: r.hold.id, proc, account, amount, reservedAtMs, expired: false });
            check(account, "a reservation");
          });
      }

      function resolve(): Promise<void> | undefined {
        const h = take(holds);
        if (!h) return undefined;
        const x = h.account;
        if (!h.expired) x.held -= h.amount;
        resolved.push(h);
        if (rand.next() < 0.2) {
          count("release");
          return h.proc.ledger.release(h.id);
        }
        // Less than the hold, or more (an estimate can be wrong): the excess is an overshoot, and all of a late charge.
        const charged = rand.big(Number(h.amount) * 1.3 + 2);
        x.posted += charged;
        if (!h.expired) x.capped += capped(charged, h.amount);
        count(h.expired ? "late settle" : "settle");
        return h.proc.ledger.settle(h.id, charged).then(() => {});
      }

      function resolveAgain(): Promise<void> | undefined {
        const h = resolved.length > 0 ? rand.pick(resolved) : undefined;
        if (!h) return undefined;
        count("second resolution");
        const again = rand.next() < 0.5 ? h.proc.ledger.settle(h.id, 1n) : h.proc.ledger.release(h.id);
        return again.then(
          () => Promise.reject(new Error(`seed ${SEED}: hold ${h.id} resolved twice`)),
          (err: unknown) => {
            if (!(err instanceof HoldResolvedError)) throw err;
          },
        );
      }

      function reserveDurable(): Promise<void> {
        const user = rand.pick(users);
        const account = accountOf("daily_allowance", user);
        const again = durables.length > 0 && rand.next() < 0.1 ? rand.pick(durables) : undefined;
        const id = again?.id ?? randomUUID();
        const amount = again?.amount ?? rand.big(4_000);
        const expiresAtMs = again?.expiresAtMs ?? clock.now().getTime() + rand.int(30 * 60_000);
        const on = again?.account ?? account;
        count(again ? "durable again" : "durable reserve");
        return rand
          .pick(procs())
          .ledger.reserveDurable({
            kind: "daily_allowance",
            userId: on.userId,
            base: on.base,
            planRevision: users.find((u) => u.id === on.userId)!.revision,
            weeklyResets: on.auto ? WEEKLY_RESETS : null,
            id,
            amount,
            reference: "prop",
            expiresAt: new Date(expiresAtMs),
          })
          .then((r) => {
            if (again) {
              // The same id is the same hold, whatever became of it: never a second one.
              if (!r.ok || r.hold.id !== id || r.hold.amount !== amount)
                throw new Error(`seed ${SEED}: durable ${id} reserved twice differently`);
              return;
            }
            if (!r.ok) return count("durable refused");
            // Its period is the one the ledger used (the clock does not move during a batch).
            on.held += amount;
            durables.push({ id, account: on, amount, expiresAtMs, state: "pending" });
            check(on, "a durable hold");
          });
      }

      function resolveDurable(): Promise<unknown> | undefined {
        const open = durables.filter((d) => d.state !== "done");
        const d = open.length > 0 ? rand.pick(open) : undefined;
        if (!d) return undefined;
        const x = d.account;
        const wasPending = d.state === "pending";
        d.state = "done";
        if (wasPending) x.held -= d.amount;
        const ledger = rand.pick(procs()).ledger;
        if (rand.next() < 0.3) {
          count("durable void");
          return ledger.voidDurable(d.id);
        }
        const charged = rand.big(Number(d.amount) * 1.2 + 2);
        x.posted += charged;
        if (wasPending) x.capped += capped(charged, d.amount);
        count(wasPending ? "durable post" : "durable late post");
        return ledger.postDurable(d.id, charged);
      }

      function restore(): Promise<void> {
        const user = rand.pick(users);
        const kind: AccountKind = rand.next() < 0.8 ? "daily_allowance" : "reseller_usd";
        const account = accountOf(kind, user);
        // Small and rare enough that the days still run out (restorations raise what an account allows).
        const amount = rand.big(2_000);
        const reference = references.length > 0 && rand.next() < 0.15 ? rand.pick(references) : `r${references.push(randomUUID()) - 1}`;
        const ref = reference.startsWith("r") && !reference.includes("-") ? references[Number(reference.slice(1))]! : reference;
        const upToSpent = rand.next() < 0.9;
        account.restoring += amount;
        count("restore");
        return a.ledger
          .restore({
            kind,
            userId: user.id,
            base: kind === "daily_allowance" ? user.base : null,
            amount,
            upToSpent,
            source: "prop",
            reference: ref,
          })
          .then((r) => {
            account.restoring -= amount;
            if (r.duplicate) return count("restore again");
            if (r.applied > amount) throw new Error(`seed ${SEED}: restored ${r.applied}, more than the ${amount} asked for`);
            account.restored += r.applied;
          });
      }

      /** A token transfer: the sender's day holds it (a durable hold) until it completes. */
      function sendTransfer(): Promise<void> {
        const [sender, recipient] = [rand.pick(users), rand.pick(users)];
        if (sender === recipient) return Promise.resolve();
        const account = accountOf("daily_allowance", sender);
        const amount = 1n + rand.big(3_000);
        const id = randomUUID();
        count("transfer send");
        return sendRows(
          rand.pick(procs()) === a ? poolA : poolB,
          {
            id,
            holdId: randomUUID(),
            senderId: sender.id,
            recipientId: recipient.id,
            idempotencyKey: id,
            amount,
            day: account.period,
            senderBase: sender.base,
            holdExpiresAt: new Date(clock.now().getTime() + 2 * 86_400_000),
          },
          () => Promise.resolve(NO_LIMITS),
        ).then((outcome) => {
          if (outcome.outcome !== "created") return count("transfer refused");
          account.held += amount;
          transfers.push({ id, sender: account, recipientId: recipient.id, day: account.period, amount });
          check(account, "a transfer's send");
        });
      }

      /** Its completion: the sender's hold posted for what the recipient could take, that much restored to them. */
      function completeTransfer(): Promise<void> | undefined {
        const t = take(transfers);
        if (!t) return undefined;
        count("transfer completion");
        const recipient = users.find((u) => u.id === t.recipientId)!;
        return completeRows(rand.pick([poolA, poolB]), t.id, { today: utcDay(clock.now()), baseOf: () => recipient.base }).then((row) => {
          t.sender.held -= t.amount;
          if (row?.status !== "completed") return count("transfer refused at completion");
          const applied = row.applied!;
          t.sender.posted += applied;
          t.sender.capped += applied;
          const received = accountOf("daily_allowance", recipient, t.day);
          if (!received.auto) received.restored += applied;
        });
      }

      /** The expiry among the other operations (never while a durable hold is due: the model could not tell which came first). */
      function expireAmong(): Promise<unknown> | undefined {
        const nowMs = clock.now().getTime();
        if (durables.some((d) => d.state === "pending" && d.expiresAtMs <= nowMs)) return undefined;
        count("expiry among");
        return rand.pick(procs()).ledger.expire();
      }

      function credit(): Promise<unknown> {
        const user = rand.pick(users);
        const account = accountOf("reseller_usd", user);
        const amount = 1n + rand.big(3_000);
        account.credited += amount;
        count("credit");
        return b.ledger.creditReseller(user.id, amount, "prop");
      }

      const concurrent: [number, () => Promise<unknown> | undefined][] = [
        [40, reserve],
        [34, resolve],
        [1, resolveAgain],
        [4, reserveDurable],
        [4, resolveDurable],
        [2, restore],
        [1, credit],
        [2, sendTransfer],
        [2, completeTransfer],
        [1, expireAmong],
      ];
      const total = concurrent.reduce((sum, [w]) => sum + w, 0);
      const pickOp = () => {
        let r = rand.int(total);
        for (const [w, op] of concurrent) if ((r -= w) < 0) return op;
        return reserve;
      };

      // Operations between batches, when nothing is in flight.
      async function advance() {
        // Seconds to minutes, now and then past midnight.
        const step = rand.next() < 0.05 ? 6 * 3_600_000 : rand.int(120_000);
        clock.advance(step);
        count("clock");
        const nowMs = clock.now().getTime();
        for (const h of holds) {
          if (!h.expired && nowMs - h.reservedAtMs > MAX_HOLD_SECONDS * 1000) {
            h.expired = true;
            h.account.held -= h.amount;
          }
        }
        for (const p of procs()) p.ledger.sweep();
      }

      async function expire() {
        const nowMs = clock.now().getTime();
        for (const d of durables) {
          if (d.state === "pending" && d.expiresAtMs <= nowMs) {
            d.state = "expired";
            d.account.held -= d.amount;
          }
        }
        count("expire");
        await rand.pick(procs()).ledger.expire();
      }

      /**
       * The mortal process pauses past its timeout (its heartbeat two hours old): the expiry may fence it, its leases
       * expire, and it keeps reserving, settling and syncing, racing that. What it held may have gone back: the model
       * counts it held no more, and a late charge of it as overshoot. What it admits from now on counts in full.
       */
      async function zombie() {
        for (const h of holds) {
          if (h.proc !== mortal || h.expired) continue;
          h.expired = true;
          h.account.held -= h.amount;
        }
        await db.pool.query("update gateway_instances set last_seen_at = now() - interval '2 hours' where id = $1", [mortal.instance.id]);
        count("zombie");
      }

      /** A plan raised (the allowance of its user's day with it): a process sometimes keeps stating the previous one. */
      function raisePlan() {
        const user = rand.pick(users);
        user.previous = { base: user.base, revision: user.revision };
        user.base += rand.big(50_000);
        user.revision += 1;
        accountOf("daily_allowance", user).base = user.base;
        count("plan raise");
      }

      /** The mortal process dies with whatever it holds: nothing of it is ever resolved, its leases expire. */
      async function kill() {
        for (let i = holds.length - 1; i >= 0; i--) {
          const h = holds[i]!;
          if (h.proc !== mortal) continue;
          holds.splice(i, 1);
          if (!h.expired) h.account.held -= h.amount;
        }
        await mortal.instance.stop();
        await a.ledger.expire();
        deaths++;
        count("kill");
        mortal = await start(`c${deaths}`, poolB, true);
      }

      /** Something that never ends is a failure of its own (an operation stuck for good), not a timeout of the test. */
      const bounded = async (work: Promise<unknown>, what: string) => {
        let stuck: NodeJS.Timeout | undefined;
        const late = new Promise((_, reject) => {
          stuck = setTimeout(() => reject(new Error(`seed ${SEED}: ${what} did not end within a minute`)), 60_000);
        });
        await Promise.race([work, late]).finally(() => clearTimeout(stuck));
      };

      let done = 0;
      while (done < OPS) {
        const batch: Promise<unknown>[] = [];
        for (let i = 0; i < BATCH && done < OPS; i++, done++) {
          const running = pickOp()();
          if (running) batch.push(running.then(() => checkAll("an operation")));
        }
        await bounded(Promise.all(batch), "a batch");
        await readAutoRestorations();
        checkAll("a batch", true);
        const r = rand.next();
        if (r < 0.3) await advance();
        else if (r < 0.4) await bounded(expire(), "an expiry");
        else if (r < 0.41) await bounded(kill(), "a kill");
        else if (r < 0.43) await zombie();
        else if (r < 0.45) raisePlan();
        else if (r < 0.49) await bounded(rand.pick(procs()).ledger.flush(), "a flush");
        await readAutoRestorations();
        checkAll("a barrier", true);
      }

      // Resolve everything, give every leased unit back, and expire what the dead left behind.
      for (const h of holds.splice(0)) {
        if (!h.expired) h.account.held -= h.amount;
        await h.proc.ledger.release(h.id);
      }
      while (transfers.length > 0) await completeTransfer();
      for (const d of durables) {
        if (d.state === "pending") {
          d.account.held -= d.amount;
          d.state = "done";
          await a.ledger.voidDurable(d.id);
        }
      }
      for (const p of procs()) await p.ledger.flush();
      await a.ledger.expire();
      await readAutoRestorations();

      // Every account's row reconciles with the holds, leases, restorations and credits that justify it.
      expect(await reconcileLedger(db.pool), `seed ${SEED}`).toEqual([]);
      const { rows } = await db.pool.query<{
        kind: AccountKind;
        user_id: string;
        period: string;
        credits: string;
        restored: string;
        posted: string;
        pending: string;
      }>(
        // The reset stocks the automatic resets drew on are not modelled: the reconciliation above covers them.
        "select kind, user_id, period, credits::text, restored::text, debits_posted::text as posted, debits_pending::text as pending from quota_account_balances where kind in ('daily_allowance', 'reseller_usd')",
      );
      for (const row of rows) {
        const label = `seed ${SEED}: ${row.kind} of ${row.user_id} (${row.period})`;
        // Nothing is held any more, and the row agrees with the model.
        expect(row.pending, label).toBe("0");
        const model = accounts.get(`${row.kind}/${row.user_id}/${row.period}`);
        expect({ posted: row.posted, restored: row.restored }, label).toEqual({
          posted: String(model?.posted ?? 0n),
          restored: String(model?.restored ?? 0n),
        });
        if (row.kind === "reseller_usd") expect(row.credits, label).toBe(String(model?.credited ?? 0n));
      }
      for (const x of accounts.values()) expect(x.held, `seed ${SEED}: the model still holds units of ${x.userId}`).toBe(0n);
      const uses = (await db.pool.query<{ n: number }>("select count(*)::int as n from quota_reset_uses where trigger = 'automatic'"))
        .rows[0]!.n;
      console.info(
        `ledger property, seed ${SEED}: ${OPS} operations over ${rows.length} accounts, ${uses} automatic resets; ${JSON.stringify(counts)}`,
      );
    },
  );
});
