import { pino } from "pino";
import { createDatabaseHealth, type DatabaseHealth } from "../db/health.js";
import type pg from "pg";
import type { Pool } from "../db/pool.js";
import { inTransaction, transactionOn } from "../db/transaction.js";
import type { Listener } from "../db/listener.js";
import { createGiveBack } from "./give-back.js";
import { noMetrics, type LedgerMetrics } from "../metrics/recorders.js";
import { accountAt, accountKinds, baseRevision, kindSpec } from "./account-kinds.js";
import { ensureAccount, readAccount, type AccountKey, type AccountRow } from "./account-sql.js";
import { systemClock, type Clock } from "../time/clock.js";
import { readDurableRow, reserveDurableRow, resolveDurableRow, type DurableRow } from "./durable-sql.js";
import { createEscrow, type Escrow } from "./escrow.js";
import { expireRows } from "./expire-sql.js";
import { leaseDirectPost } from "./lease-direct-sql.js";
import { leaseSync, type Journal, type SyncLease } from "./lease-sql.js";
import { creditResellerRow } from "./reseller.js";
import { leaseRefund } from "./refund-sql.js";
import { AUTO_RESET_THRESHOLD, autoResetUseId } from "./auto-reset.js";
import type { AutoResetRequest } from "./lease-auto-reset.js";
import type { Lease } from "./lease.js";
import { grantResetsRow, readResetsRows, useResetIn } from "./resets-sql.js";
import { earlierRestoration, restoreRow } from "./restore-sql.js";
import { isoWeek, nextWeekAt } from "../time/week.js";
import {
  HoldNotFoundError,
  HoldResolvedError,
  type AccountBalance,
  type AccountKind,
  type AccountRef,
  type DurableHold,
  type DurableHoldInput,
  type DurableReserveResult,
  type Instance,
  type QuotaLedger,
  type Restoration,
  type RestoreInput,
} from "./types.js";

// The ledger: an escrow per account kind (escrow.ts) for the requests of this process, durable holds and
// restorations as guarded statements, and the expiry. Which escrow serves a reservation is the kind's; nothing
// here switches on a particular kind.

export interface LedgerOptions {
  /** This serving process; a ledger without one (admin commands) reads, credits and restores but never reserves. */
  instance?: Instance;
  clock?: Clock;
  /** A request holding its reservation longer than this has it expired (a late settle still posts). */
  maxHoldSeconds: number;
  /** A process silent this long is presumed dead and its leases expire (quota.instance_timeout_seconds). */
  instanceTimeoutSeconds?: number;
  /** A lease unused this long gives its units back (quota.lease_idle_ms). */
  leaseIdleMs?: number;
  /** How long a settlement may wait for others to share its commit (quota.commit_group_ms). */
  commitGroupMs?: number;
  /**
   * When this process loaded its config, in seconds: the second part of the revision of the base credits it states
   * (account-kinds.ts, baseRevision). 0 for a ledger that only reads and credits.
   */
  configRevision?: bigint;
  /** Commits each request's record with its resolution (the request log). */
  journal?: Journal;
  /** Where transient database faults are reported (one line when the database goes away, one when it is back). */
  health?: DatabaseHealth;
  /** A reservation that needs the database waits at most this long, then gets 503 (database.request_timeout_ms). */
  admissionTimeoutMs?: number;
  /** At close, how long unwritten settlements keep being retried before they are given up (and logged). */
  shutdownGraceMs?: number;
  /** A background statement (sync, direct post, expiry) whose answer takes longer is abandoned and retried. */
  statementTimeoutMs?: number;
  onSyncError?: (err: unknown, leaseId: string) => void;
  /** Holds, resolutions, overshoots, expiries and lease syncs; none recorded without it. */
  metrics?: LedgerMetrics;
  /** The process's LISTEN connection: processes ask each other for unused units through it (give-back.ts). */
  listener?: Listener;
}

const SWEEP_MS = 1000;

const LOCK_LEASE = `select 1 from quota_leases where id = $1::uuid for update`;

export function createQuotaLedger(pool: Pool, opts: LedgerOptions): QuotaLedger {
  const clock = opts.clock ?? systemClock;
  const instanceTimeoutSeconds = opts.instanceTimeoutSeconds ?? 90;
  const sync = leaseSync(opts.journal, opts.statementTimeoutMs);
  const directPost = leaseDirectPost(opts.journal, opts.statementTimeoutMs);
  const refund = leaseRefund(opts.journal, opts.statementTimeoutMs);
  // Without a monitor (tests, tools) faults are still retried, just not reported.
  const health = opts.health ?? createDatabaseHealth(pino({ enabled: false }));
  const metrics = opts.metrics ?? noMetrics.ledger;
  const unsynced = { count: 0 };
  health.watch("settlements_waiting", () => unsynced.count);
  let givingUp = false;
  const configRevision = opts.configRevision ?? 0n;
  // An automatic use on an account's day (its period), under the day's lock like a manual one, then the sync that
  // admits the request it is for, in one transaction: a reset is never spent for a request that is then refused.
  // The week is the restored day's, never the week of the moment the reset runs (a reset just after Monday 00:00
  // for Sunday's day is Sunday's week's). The lease row is locked first, the order of every sync.
  const syncWithReset = (on: pg.PoolClient, lease: Lease, payload: SyncLease, r: AutoResetRequest) =>
    transactionOn(pool, on, async (client) => {
      await client.query({ name: "quota_lock_lease", text: LOCK_LEASE, values: [lease.id] });
      const outcome = await useResetIn(client, {
        userId: lease.userId,
        id: r.id,
        day: lease.period,
        weeklyBase: r.weeklyBase,
        baseRevision: payload.baseRevision,
        nowIso: clock.now().toISOString(),
        trigger: "automatic",
        automatic: { ownFree: r.ownFree, need: r.need, threshold: AUTO_RESET_THRESHOLD, posting: payload.post },
      });
      return { reply: await sync(client, payload), outcome };
    });
  const escrows = new Map<AccountKind, Escrow>();
  const instance = opts.instance;
  const giveBack = instance
    ? createGiveBack(
        opts.listener,
        () => instance.id,
        async (accountId) => {
          let given: bigint | null = null;
          for (const escrow of escrows.values()) {
            const gave = await escrow.yieldOn(accountId);
            if (gave !== null) given = (given ?? 0n) + gave;
          }
          return given;
        },
      )
    : undefined;
  if (opts.instance) {
    for (const kind of accountKinds.filter((k) => kindSpec(k).leased)) {
      escrows.set(
        kind,
        createEscrow({
          pool,
          kind,
          clock,
          instance: opts.instance,
          sync,
          syncWithReset: kindSpec(kind).resettable ? syncWithReset : undefined,
          directPost,
          refund,
          health,
          givingUp: () => givingUp,
          unsynced,
          admissionTimeoutMs: opts.admissionTimeoutMs ?? 2000,
          maxHoldSeconds: opts.maxHoldSeconds,
          idleMs: opts.leaseIdleMs ?? 2000,
          groupMs: opts.commitGroupMs ?? 0,
          baseRevision: (planRevision) => baseRevision(planRevision, configRevision),
          onSyncError: opts.onSyncError,
          metrics: metrics.account(kind),
          askOthers: (accountId, others, maxWaitMs) => giveBack!.ask(accountId, others, maxWaitMs),
        }),
      );
    }
    // A fenced process drops every lease before it admits again (instances.ts, "Fencing").
    opts.instance.onFenced(() => {
      for (const escrow of escrows.values()) escrow.fence();
    });
  }
  const all = [...escrows.values()];
  const escrowOf = (kind: AccountKind): Escrow => {
    const escrow = escrows.get(kind);
    if (escrow) return escrow;
    if (!kindSpec(kind).leased) throw new TypeError(`an account of kind ${kind} is not reserved through leases`);
    throw new Error("this ledger has no gateway instance: it cannot reserve");
  };
  /** The escrow holding a reservation; the first (which then reports it resolved) when none does. */
  const holding = (holdId: string): Escrow | undefined => all.find((e) => e.owns(holdId)) ?? all[0];

  const sweep = () => {
    for (const escrow of all) escrow.sweep();
  };
  const timer = all.length > 0 ? setInterval(sweep, SWEEP_MS) : undefined;
  timer?.unref();

  const keyOf = (ref: AccountRef, now: Date): { key: AccountKey; base: bigint | null } => {
    const { period, base } = accountAt(ref, now);
    return { key: { userId: ref.userId, kind: ref.kind, period }, base };
  };

  function toBalance(
    kind: AccountKind,
    period: string,
    row: Pick<AccountRow, "credits" | "restored" | "posted" | "pending"> | undefined,
    base: bigint | null,
    now: Date,
  ): AccountBalance {
    const credits = base ?? row?.credits ?? 0n;
    const restored = row?.restored ?? 0n;
    const used = row?.posted ?? 0n;
    const reserved = row?.pending ?? 0n;
    return {
      kind,
      period,
      credits,
      restored,
      used,
      reserved,
      remaining: credits + restored - used - reserved,
      resetsAt: kindSpec(kind).periodEnd(now),
    };
  }

  const toDurable = (id: string, row: DurableRow): DurableHold => ({
    id,
    accountId: row.accountId,
    amount: row.amount,
    status: row.status,
    charged: row.charged,
    reference: row.reference,
    expiresAt: row.expiresAt,
  });

  const revisionOf = (ref: { planRevision?: number }) => baseRevision(ref.planRevision ?? 0, configRevision);

  async function reserveDurable(input: DurableHoldInput): Promise<DurableReserveResult> {
    if (input.amount < 0n) throw new RangeError(`cannot hold a negative amount (${input.amount})`);
    const now = clock.now();
    const { key, base } = keyOf(input, now);
    const revision = revisionOf(input);
    const args = {
      id: input.id,
      userId: key.userId,
      kind: key.kind,
      period: key.period,
      base,
      baseRevision: revision,
      amount: input.amount,
      reference: input.reference,
      expiresAt: input.expiresAt,
    };
    let row: Awaited<ReturnType<typeof reserveDurableRow>>;
    if (input.weeklyResets != null && input.amount > 0n && kindSpec(input.kind).resettable) {
      // An automatic reset first, as a request's in admission, and the hold it is for in the same transaction: a
      // reset is never spent for a hold that is then refused. Its id is the hold's, so a retry is the same use.
      const weeklyBase = input.weeklyResets;
      row = await inTransaction(pool, async (client) => {
        await ensureAccount(client, key, base, revision);
        await useResetIn(client, {
          userId: key.userId,
          id: autoResetUseId(input.id, 0),
          day: key.period,
          weeklyBase,
          baseRevision: revision,
          nowIso: now.toISOString(),
          trigger: "automatic",
          automatic: { ownFree: 0n, need: input.amount, threshold: AUTO_RESET_THRESHOLD, posting: 0n },
        });
        return reserveDurableRow(client, args);
      });
    } else {
      row = await reserveDurableRow(pool, args);
      if (row.account === "missing") {
        await ensureAccount(pool, key, base, revision);
        row = await reserveDurableRow(pool, args);
      }
    }
    if (row.account === "missing") throw new Error(`the account of durable hold ${input.id} vanished`);
    if (!row.inserted) {
      // The same id reserved before (a retry): that hold, whatever became of it, is the answer.
      const earlier = await readDurableRow(pool, input.id);
      if (earlier) return { ok: true, hold: toDurable(input.id, earlier) };
      return {
        ok: false,
        allowance: row.allowance,
        used: row.posted,
        reserved: row.pending,
        resetsAt: kindSpec(input.kind).periodEnd(now),
      };
    }
    return {
      ok: true,
      hold: {
        id: input.id,
        accountId: row.accountId,
        amount: input.amount,
        status: "pending",
        charged: null,
        reference: input.reference,
        expiresAt: input.expiresAt,
      },
    };
  }

  async function resolveDurable(id: string, charged: bigint | null): Promise<DurableHold> {
    const row = await resolveDurableRow(pool, id, charged);
    if (!row) throw new HoldNotFoundError(id);
    // Posting a posted hold, or voiding a voided or expired one, is the first outcome again.
    const conflicting = charged === null ? row.status === "posted" : row.status === "voided";
    if (conflicting) throw new HoldResolvedError(id, row.status);
    return toDurable(id, row);
  }

  async function restore(input: RestoreInput): Promise<Restoration> {
    if (input.amount < 0n) throw new RangeError(`cannot restore a negative amount (${input.amount})`);
    const { key, base } = keyOf(input, clock.now());
    const args = {
      userId: key.userId,
      kind: key.kind,
      period: key.period,
      amount: input.amount,
      upToSpent: input.upToSpent,
      source: input.source,
      reference: input.reference,
    };
    let outcome = await restoreRow(pool, args);
    if (outcome.account === "missing") {
      await ensureAccount(pool, key, base, revisionOf(input));
      outcome = await restoreRow(pool, args);
    }
    if (outcome.account === "found" && outcome.applied !== null)
      return { applied: outcome.applied, duplicate: false, accountId: outcome.accountId };
    const earlier = await earlierRestoration(pool, input.source, input.reference);
    if (!earlier) throw new Error(`restoration ${input.source}/${input.reference} was neither applied nor found`);
    return { applied: earlier.amount, duplicate: true, accountId: earlier.accountId };
  }

  return {
    reserve: (input) => escrowOf(input.kind).reserve(input),

    settle(holdId, charged, record = null, options) {
      // Checked here: a bad charge must not reach the sync it would have joined.
      if (charged < 0n) return Promise.reject(new RangeError(`cannot charge a negative amount (${charged})`));
      const escrow = holding(holdId);
      return escrow ? escrow.resolve(holdId, charged, record, options) : Promise.reject(new HoldResolvedError(holdId));
    },

    async release(holdId, record = null) {
      const escrow = holding(holdId);
      if (!escrow) throw new HoldResolvedError(holdId);
      await escrow.resolve(holdId, null, record);
    },

    reserveDurable,
    postDurable(id, charged) {
      if (charged < 0n) return Promise.reject(new RangeError(`cannot charge a negative amount (${charged})`));
      return resolveDurable(id, charged);
    },
    voidDurable: (id) => resolveDurable(id, null),
    restore,

    async useReset(input, client) {
      const now = clock.now();
      const day = keyOf({ kind: "daily_allowance", userId: input.userId, base: input.dailyBase }, now);
      const revision = revisionOf(input);
      const use = async (on: pg.PoolClient) => {
        await ensureAccount(on, day.key, day.base, revision);
        return useResetIn(on, {
          userId: input.userId,
          id: input.id,
          day: day.key.period,
          weeklyBase: input.weeklyBase,
          baseRevision: revision,
          nowIso: now.toISOString(),
          trigger: input.trigger,
        });
      };
      return client ? use(client) : inTransaction(pool, use);
    },

    grantResets: (input, client) => grantResetsRow(client ?? pool, input),

    async resets(userId, weeklyBase, client) {
      const now = clock.now();
      const week = isoWeek(now);
      const rows = await readResetsRows(client ?? pool, userId, week, now.toISOString());
      const left = weeklyBase - rows.weeklyUsed;
      return Object.assign(rows, {
        week,
        weeklyRenewsAt: nextWeekAt(now),
        weeklyAllowance: weeklyBase,
        weeklyLeft: left > 0n ? left : 0n,
      });
    },

    async balance(ref) {
      const now = clock.now();
      const { key, base } = keyOf(ref, now);
      return toBalance(ref.kind, key.period, await readAccount(pool, key), base, now);
    },

    async creditReseller(userId, amount, note, client) {
      const now = clock.now();
      const kind: AccountKind = "reseller_usd";
      const period = kindSpec(kind).period(now);
      return toBalance(kind, period, await creditResellerRow(client ?? pool, userId, amount, note, { kind, period }), null, now);
    },

    flush: async () => {
      await Promise.all(all.map((e) => e.flush()));
    },
    close: async () => {
      if (timer) clearInterval(timer);
      giveBack?.stop();
      // With the database away, unwritten settlements are retried for the grace, then given up (each logged
      // by the meter as SETTLEMENT_FAILED with its charge): shutdown cannot wait for ever.
      const grace = setTimeout(() => (givingUp = true), opts.shutdownGraceMs ?? 30_000);
      try {
        await Promise.all(all.map((e) => e.close()));
      } finally {
        clearTimeout(grace);
      }
    },
    sweep,
    async expire() {
      const expired = await expireRows(pool, instanceTimeoutSeconds, clock.now());
      metrics.expired(expired.leases, expired.durable);
      return expired;
    },
    stats: () => ({ unsynced: unsynced.count, accounts: all.map((e) => e.stats()) }),
  };
}
