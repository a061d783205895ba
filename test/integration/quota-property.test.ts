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
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { QUIET_INSTANCE } from "../helpers/ledger-fixture.js";

// A property test of the ledger (docs/billing.md): a seeded random sequence of operations on real PostgreSQL,
// by two gateway processes plus a third that gets killed and replaced now and then, across both account kinds,
// with the clock moving across days. A model of what the test did checks after every operation that no
// account has admitted more than it allows (credits + restored) plus the overshoot the ledger documents (a
// charge above its hold; a late charge of a hold that had expired), and at the end that every account's row
// reconciles exactly with the holds, leases and restorations tables and with the model.
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
  /** What the ledger may admit beyond the account's allowance: charges above their holds, late charges. */
  overshoot: bigint;
  /** Units held by admitted, unresolved, unexpired requests and pending durable holds. */
  held: bigint;
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

describe("ledger property", () => {
  let db: TestDatabase;
  const pools: Pool[] = [];
  const instances: Instance[] = [];
  const ledgers: QuotaLedger[] = [];

  afterAll(async () => {
    await Promise.allSettled(ledgers.map((l) => l.close()));
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
      const start = async (name: string, pool: Pool): Promise<Proc> => {
        const instance = await registerInstance(pool, QUIET_INSTANCE);
        instances.push(instance);
        const ledger = createQuotaLedger(pool, {
          instance,
          clock,
          maxHoldSeconds: MAX_HOLD_SECONDS,
          leaseIdleMs: 60_000,
        });
        ledgers.push(ledger);
        return { name, ledger, instance };
      };
      const a = await start("a", poolA);
      const b = await start("b", poolB);
      let mortal = await start("c0", poolB);
      let deaths = 0;

      const users: { id: string; base: bigint }[] = [];
      for (let i = 0; i < 3; i++) {
        const { rows } = await db.pool.query<{ id: string }>(
          "insert into users (email, password_hash, plan) values ($1, 'x', 'free') returning id",
          [`prop-${i}@example.test`],
        );
        users.push({ id: rows[0]!.id, base: BigInt(200_000 + rand.int(300_000)) });
      }

      const accounts = new Map<string, Account>();
      const accountOf = (kind: AccountKind, user: { id: string; base: bigint }): Account => {
        const period = kind === "daily_allowance" ? utcDay(clock.now()) : "balance";
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
            overshoot: 0n,
            held: 0n,
          };
          accounts.set(key, account);
        }
        return account;
      };
      const allows = (x: Account) => x.base + x.credited + x.restored + x.restoring;
      const check = (x: Account, what: string) => {
        if (x.held + x.posted > allows(x) + x.overshoot) {
          throw new Error(
            `seed ${SEED}: after ${what}, ${x.kind} of ${x.userId} (${x.period}) holds ${x.held} and posted ${x.posted}, over its allowance ${allows(x)} + overshoot ${x.overshoot}`,
          );
        }
      };
      const checkAll = (what: string) => {
        for (const x of accounts.values()) check(x, what);
      };

      const holds: LeaseHold[] = [];
      const durables: DurableHold[] = [];
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
        count("reserve");
        return proc.ledger
          .reserve({ kind, userId: user.id, base: kind === "daily_allowance" ? user.base : null, amount, requestId: "req_prop" })
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
        x.overshoot += h.expired ? charged : charged > h.amount ? charged - h.amount : 0n;
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
        x.overshoot += wasPending ? (charged > d.amount ? charged - d.amount : 0n) : charged;
        count(wasPending ? "durable post" : "durable late post");
        return ledger.postDurable(d.id, charged);
      }

      function restore(): Promise<void> {
        const user = rand.pick(users);
        const kind: AccountKind = rand.next() < 0.8 ? "daily_allowance" : "reseller_usd";
        const account = accountOf(kind, user);
        const amount = rand.big(5_000);
        const reference = references.length > 0 && rand.next() < 0.15 ? rand.pick(references) : `r${references.push(randomUUID()) - 1}`;
        const ref = reference.startsWith("r") && !reference.includes("-") ? references[Number(reference.slice(1))]! : reference;
        const upToSpent = rand.next() < 0.7;
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

      function credit(): Promise<unknown> {
        const user = rand.pick(users);
        const account = accountOf("reseller_usd", user);
        const amount = 1n + rand.big(20_000);
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
        mortal = await start(`c${deaths}`, poolB);
      }

      let done = 0;
      while (done < OPS) {
        const batch: Promise<unknown>[] = [];
        for (let i = 0; i < BATCH && done < OPS; i++, done++) {
          const running = pickOp()();
          if (running) batch.push(running.then(() => checkAll("an operation")));
        }
        await Promise.all(batch);
        const r = rand.next();
        if (r < 0.3) await advance();
        else if (r < 0.4) await expire();
        else if (r < 0.41) await kill();
        else if (r < 0.45) await rand.pick(procs()).ledger.flush();
        checkAll("a barrier");
      }

      // Resolve everything, give every leased unit back, and expire what the dead left behind.
      for (const h of holds.splice(0)) {
        if (!h.expired) h.account.held -= h.amount;
        await h.proc.ledger.release(h.id);
      }
      for (const d of durables) {
        if (d.state === "pending") {
          d.account.held -= d.amount;
          d.state = "done";
          await a.ledger.voidDurable(d.id);
        }
      }
      for (const p of procs()) await p.ledger.flush();
      await a.ledger.expire();

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
        "select kind, user_id, period, credits::text, restored::text, debits_posted::text as posted, debits_pending::text as pending from quota_accounts",
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
      console.info(`ledger property, seed ${SEED}: ${OPS} operations over ${rows.length} accounts; ${JSON.stringify(counts)}`);
    },
  );
});
