import { pino } from "pino";
import type pg from "pg";
import { createDatabaseHealth, type DatabaseHealth } from "../db/health.js";
import type { Listener } from "../db/listener.js";
import type { Pool } from "../db/pool.js";
import { transactionOn } from "../db/transaction.js";
import type { LedgerMetrics, LedgerStats } from "../metrics/recorders.js";
import type { Clock } from "../time/clock.js";
import { accountKinds, baseRevision, kindSpec } from "./account-kinds.js";
import { AUTO_RESET_THRESHOLD } from "./auto-reset.js";
import { createEscrow, type Escrow, type EscrowOptions } from "./escrow.js";
import { createGiveBack, type GiveBack } from "./give-back.js";
import { leaseDirectPost } from "./lease-direct-sql.js";
import { leaseSync, type SyncLease, type SyncLeaseFn } from "./lease-sql.js";
import type { AutoResetRequest } from "./lease-auto-reset.js";
import type { Lease } from "./lease.js";
import type { LedgerOptions } from "./ledger-options.js";
import { leaseRefund } from "./refund-sql.js";
import { useResetIn } from "./resets-sql.js";
import type { AccountKind, Instance } from "./types.js";

// The ledger's escrows (escrow.ts): one per leased account kind, for the requests of this process, with what they
// share (the settlements waiting, shutdown's grace, the give-back other processes ask for) and their sweep.

const SWEEP_MS = 1000;

const LOCK_LEASE = `select 1 from quota_leases where id = $1::uuid for update`;

/** What the escrows take from the ledger besides its options. */
export interface EscrowsContext {
  clock: Clock;
  /** LedgerOptions.configRevision, or 0. */
  configRevision: bigint;
  metrics: LedgerMetrics;
}

export interface LedgerEscrows {
  /** The escrow reserving accounts of `kind`; throws for a kind not leased, or on a ledger without an instance. */
  escrowOf(kind: AccountKind): Escrow;
  /** The escrow holding a reservation; the first (which then reports it resolved) when none does. */
  holding(holdId: string): Escrow | undefined;
  sweep(): void;
  flush(): Promise<void>;
  close(): Promise<void>;
  stats(): LedgerStats;
}

// An automatic use on an account's day (its period), under the day's lock like a manual one, then the sync that
// admits the request it is for, in one transaction: a reset is never spent for a request that is then refused.
// The week is the restored day's, never the week of the moment the reset runs (a reset just after Monday 00:00
// for Sunday's day is Sunday's week's). The lease row is locked first, the order of every sync.
const resetThenSync =
  (pool: Pool, clock: Clock, sync: SyncLeaseFn) => (on: pg.PoolClient, lease: Lease, payload: SyncLease, r: AutoResetRequest) =>
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

/** This process's answers to the others' asks: what its escrows gave back on the account (null: no lease there). */
function giveBackOf(listener: Listener | undefined, instance: Instance, escrows: Map<AccountKind, Escrow>): GiveBack {
  return createGiveBack(listener, {
    selfId: () => instance.id,
    async give(accountId, wanted) {
      let given: bigint | null = null;
      for (const escrow of escrows.values()) {
        const gave = await escrow.yieldOn(accountId, wanted);
        if (gave !== null) given = (given ?? 0n) + gave;
      }
      return given;
    },
    spent(accountId, amount) {
      for (const escrow of escrows.values()) escrow.spentOn(accountId, amount);
    },
  });
}

/** What the escrows of one process share with each other. */
interface SharedByEscrows {
  instance: Instance;
  health: DatabaseHealth;
  unsynced: { count: number };
  givingUp(): boolean;
  peers: EscrowOptions["peers"];
}

/** One escrow per leased kind, into `escrows`. */
function openEscrows(pool: Pool, opts: LedgerOptions, ctx: EscrowsContext, shared: SharedByEscrows, escrows: Map<AccountKind, Escrow>) {
  const sync = leaseSync(opts.journal, opts.statementTimeoutMs);
  const directPost = leaseDirectPost(opts.journal, opts.statementTimeoutMs);
  const refund = leaseRefund(opts.journal, opts.statementTimeoutMs);
  const syncWithReset = resetThenSync(pool, ctx.clock, sync);
  for (const kind of accountKinds.filter((k) => kindSpec(k).leased)) {
    escrows.set(
      kind,
      createEscrow({
        pool,
        kind,
        clock: ctx.clock,
        instance: shared.instance,
        sync,
        syncWithReset: kindSpec(kind).resettable ? syncWithReset : undefined,
        directPost,
        refund,
        health: shared.health,
        givingUp: shared.givingUp,
        unsynced: shared.unsynced,
        admissionTimeoutMs: opts.admissionTimeoutMs ?? 2000,
        maxHoldSeconds: opts.maxHoldSeconds,
        idleMs: opts.leaseIdleMs ?? 2000,
        groupMs: opts.commitGroupMs ?? 0,
        baseRevision: (planRevision) => baseRevision(planRevision, ctx.configRevision),
        onSyncError: opts.onSyncError,
        metrics: ctx.metrics.account(kind),
        peers: shared.peers,
      }),
    );
  }
}

/** The escrows of a ledger with an instance (a serving process); none for a ledger without one. */
export function createLedgerEscrows(pool: Pool, opts: LedgerOptions, ctx: EscrowsContext): LedgerEscrows {
  // Without a monitor (tests, tools) faults are still retried, just not reported.
  const health = opts.health ?? createDatabaseHealth(pino({ enabled: false }));
  const unsynced = { count: 0 };
  health.watch("settlements_waiting", () => unsynced.count);
  let givingUp = false;
  const escrows = new Map<AccountKind, Escrow>();
  const instance = opts.instance;
  const giveBack = instance ? giveBackOf(opts.listener, instance, escrows) : undefined;
  if (instance) {
    openEscrows(pool, opts, ctx, { instance, health, unsynced, givingUp: () => givingUp, peers: giveBack! }, escrows);
    // A fenced process drops every lease before it admits again (instances.ts, "Fencing").
    instance.onFenced(() => {
      for (const escrow of escrows.values()) escrow.fence();
    });
  }
  const all = [...escrows.values()];
  const sweep = () => {
    for (const escrow of all) escrow.sweep();
  };
  const timer = all.length > 0 ? setInterval(sweep, SWEEP_MS) : undefined;
  timer?.unref();

  return {
    escrowOf(kind) {
      const escrow = escrows.get(kind);
      if (escrow) return escrow;
      if (!kindSpec(kind).leased) throw new TypeError(`an account of kind ${kind} is not reserved through leases`);
      throw new Error("this ledger has no gateway instance: it cannot reserve");
    },
    holding: (holdId) => all.find((e) => e.owns(holdId)) ?? all[0],
    sweep,
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
    stats: () => ({ unsynced: unsynced.count, accounts: all.map((e) => e.stats()) }),
  };
}
