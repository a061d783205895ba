import { randomUUID } from "node:crypto";
import { DatabaseUnavailableError } from "../db/faults.js";
import { extended } from "../objects.js";
import type { DatabaseHealth } from "../db/health.js";
import type { Pool } from "../db/pool.js";
import type { AccountMetrics, AccountStats } from "../metrics/recorders.js";
import { accountAt, kindSpec, type AccountKindSpec } from "./account-kinds.js";
import type { Clock } from "../time/clock.js";
import type { GiveBack } from "./give-back.js";
import type { DirectPostFn } from "./lease-direct-sql.js";
import type { SyncLeaseFn } from "./lease-sql.js";
import type { RefundFn } from "./refund-sql.js";
import { Lease } from "./lease.js";
import type { LeaseContext } from "./lease-state.js";
import type { Waiter } from "./lease-waiter.js";
import { Settling } from "./settling.js";
import {
  HoldResolvedError,
  type Hold,
  type AccountKind,
  type Instance,
  type ReserveInput,
  type ReserveResult,
  type SettleOptions,
  type SettleOutcome,
} from "./types.js";

// Reservations are admitted in memory against this process's lease on the account (lease-admission.ts), so a request
// that fits costs no database round trip; only leases are reserved in the database, atomically across
// processes, so the processes together never hold more than the account allows. Every request is still written
// to the ledger (quota_holds) when it resolves, in the sync of its lease. docs/billing.md, "Escrow".

export interface EscrowOptions {
  pool: Pool;
  kind: AccountKind;
  clock: Clock;
  instance: Instance;
  sync: SyncLeaseFn;
  syncWithReset?: LeaseContext["syncWithReset"];
  directPost: DirectPostFn;
  refund: RefundFn;
  health: DatabaseHealth;
  /** Shared by every escrow of the process: shutdown's grace ran out. */
  givingUp(): boolean;
  /** Shared by every escrow of the process: settlements not yet committed. */
  unsynced: { count: number };
  /** A reservation that waits for the database longer than this gets 503 database_unavailable. */
  admissionTimeoutMs: number;
  maxHoldSeconds: number;
  /** A lease without reservations for this long gives its units back and closes. */
  idleMs: number;
  /** How long a settlement may wait for others to share its commit. */
  groupMs: number;
  /** The revision of the base credits a lease's syncs state (account-kinds.ts, baseRevision). */
  baseRevision(planRevision: number): bigint;
  onSyncError?: (err: unknown, leaseId: string) => void;
  /** This kind's holds, resolutions, expiries and syncs. */
  metrics: AccountMetrics;
  /** The other processes on the give-back channel: asked for their unused units, told of a refusal (give-back.ts). */
  peers: Pick<GiveBack, "ask" | "tellSpent">;
}

export interface Escrow {
  reserve(input: ReserveInput): Promise<ReserveResult>;
  /**
   * Posts `charged`, or voids the reservation (null), with its journal record. Resolves once committed, or once
   * withdrawn past the deadline of `options`.
   */
  resolve(holdId: string, charged: bigint | null, record: string | null, options?: SettleOptions): Promise<SettleOutcome>;
  /** Whether `holdId` is an unresolved reservation of this escrow. */
  owns(holdId: string): boolean;
  /** Idle leases give back; reservations older than the maximum hold free their units; overdue charges are withdrawn. */
  sweep(): void;
  /** This process was fenced: every lease ends, and new reservations open new leases under its new id. */
  fence(): void;
  /**
   * Another process asks for the unused units of this process's lease on `accountId`, up to `wanted`: what was
   * given back, once committed.
   */
  yieldOn(accountId: string, wanted: bigint | undefined): Promise<bigint | null>;
  /** Another process refused a request of `amount` on `accountId` after asking every one (give-back.ts). */
  spentOn(accountId: string, amount: bigint): void;
  /** Gives every lease's free units back and waits until every sync has been applied. */
  flush(): Promise<void>;
  /** Closes every lease (outstanding requests still settle) and waits for the syncs. */
  close(): Promise<void>;
  /** Leases, holds and units now (read at scrape time). */
  stats(): AccountStats;
}

interface Reservation {
  lease: Lease;
  requestId: string;
  amount: bigint;
  reservedAt: Date;
  expired: boolean;
}

/** Per account (user and period): the lease taking new reservations. */
type LeasesByAccount = Map<string, Lease>;

/** Since the escrow was made: reservations that waited for a sync, and syncs committed (its stats). */
interface Counts {
  waits: number;
  syncs: number;
}

const keyOf = (userId: string, period: string) => `${userId}/${period}`;

export function createEscrow(opts: EscrowOptions): Escrow {
  const { clock, metrics } = opts;
  const spec = kindSpec(opts.kind);
  const leases: LeasesByAccount = new Map();
  // Every lease with work left, retired ones included, so that flush() and close() can wait for them.
  const all = new Set<Lease>();
  const holds = new Map<string, Reservation>();
  const counts: Counts = { waits: 0, syncs: 0 };
  const context = leaseContext(opts, spec, leases, counts, record, enqueue);

  /**
   * The lease taking reservations on the account, stating the newest view of its base credits it was given: a
   * reservation with a newer plan revision restates them (a plan change), an older one (a cache that missed the
   * change) never does.
   */
  function leaseFor(input: ReserveInput, base: bigint | null, period: string, nowMs: number): Lease {
    const key = keyOf(input.userId, period);
    const planRevision = input.planRevision ?? 0;
    let lease = leases.get(key);
    if (!lease) {
      lease = new Lease(context, input.userId, period, base, planRevision, nowMs);
      leases.set(key, lease);
      all.add(lease);
    } else if (planRevision > lease.planRevision || (planRevision === lease.planRevision && base !== lease.base)) {
      lease.restate(base, planRevision);
    }
    return lease;
  }

  function record(lease: Lease, input: ReserveInput, now: Date) {
    const id = randomUUID();
    holds.set(id, { lease, requestId: input.requestId, amount: input.amount, reservedAt: now, expired: false });
    return { id, accountId: lease.accountId!, amount: input.amount };
  }

  function enqueue(input: ReserveInput, now: Date, waiter: Waiter) {
    const { period, base } = accountAt(input, now);
    waiter.now = now;
    leaseFor(input, base, period, now.getTime()).wait(waiter);
  }

  function reserve(input: ReserveInput): Promise<ReserveResult> {
    if (input.amount < 0n) return Promise.reject(new RangeError(`cannot hold a negative amount (${input.amount})`));
    const now = clock.now();
    const nowMs = now.getTime();
    // The usual case, spelled out rather than through accountAt(): no object per request.
    const base = spec.base === "caller" ? input.base : null;
    if (spec.base === "caller" && base === null)
      return Promise.reject(new TypeError(`an account of kind ${opts.kind} needs its base credits`));
    const lease = leaseFor(input, base, spec.period(now, input.scope), nowMs);
    if (lease.tryTake(input.amount, nowMs, input.weeklyResets != null)) {
      metrics.held();
      return Promise.resolve({ ok: true, hold: record(lease, input, now) });
    }
    const refusal = lease.refuseAtOnce(input.amount, now);
    if (refusal) return Promise.resolve(refusal);
    return waitForSync(opts, counts, input, now, enqueue);
  }

  function resolve(holdId: string, charged: bigint | null, journalRecord: string | null, options?: SettleOptions): Promise<SettleOutcome> {
    const reservation = holds.get(holdId);
    if (!reservation) return Promise.reject(new HoldResolvedError(holdId));
    holds.delete(holdId);
    const { lease, amount, requestId, reservedAt } = reservation;
    if (charged === null) metrics.voided();
    else metrics.posted(charged, amount);
    const resolution = { holdId, requestId, amount, charged, reservedAt, record: journalRecord };
    const entry = new Settling(resolution, reservation.expired, options?.deadlineMs ?? null, options?.withdrawable ?? null);
    // A lease that can no longer sync (it was ended, its units returned): the charge posts straight to the account.
    if (lease.poisoned) lease.settleDirectly(entry);
    else lease.settle(entry);
    return entry.done;
  }

  const { sweep, fence, yieldOn, spentOn, flush, close, stats } = escrowUpkeep(opts, leases, all, holds, counts);
  return { reserve, resolve, owns: (holdId) => holds.has(holdId), sweep, fence, yieldOn, spentOn, flush, close, stats };
}

/** What an escrow gives its leases. */
function leaseContext(
  opts: EscrowOptions,
  spec: AccountKindSpec,
  leases: LeasesByAccount,
  counts: Counts,
  record: (lease: Lease, input: ReserveInput, now: Date) => Hold,
  enqueue: (input: ReserveInput, now: Date, waiter: Waiter) => void,
): LeaseContext {
  const { clock, instance, metrics } = opts;
  return {
    pool: opts.pool,
    kind: opts.kind,
    instanceId: () => instance.ready(),
    sync: opts.sync,
    syncWithReset: opts.syncWithReset,
    directPost: opts.directPost,
    refund: opts.refund,
    health: opts.health,
    givingUp: opts.givingUp,
    unsynced: opts.unsynced,
    groupMs: opts.groupMs,
    slowMs: opts.admissionTimeoutMs,
    metrics: extended<AccountMetrics, Pick<AccountMetrics, "synced">>(metrics, {
      synced(seconds: number) {
        counts.syncs++;
        metrics.synced(seconds);
      },
    }),
    fresh: () => instance.fresh(),
    beaten: (sentAt) => instance.beaten(sentAt),
    // Only a lease of the process's current id tells it it was fenced: one opened before an earlier fence is over.
    fenced: (lease) => {
      if (lease.instanceId === instance.id) instance.fenced();
    },
    periodOver(lease) {
      const end = spec.periodEndOf(lease.period);
      return end !== null && clock.now() >= end;
    },
    periodNow: (waiter) => spec.period(clock.now(), waiter.input.scope),
    resetsAt: (now) => spec.periodEnd(now),
    baseRevision: (lease) => opts.baseRevision(lease.planRevision),
    // Every lease the context is given is one of this escrow's (Lease is the one class of LeaseState).
    admit(lease: Lease, waiter) {
      lease.hold(waiter.input.amount);
      metrics.held();
      return { ok: true, hold: record(lease, waiter.input, waiter.now) };
    },
    // Reserved again now: a waiter moved to a new lease draws on the period it is admitted in.
    retry: (waiter) => enqueue(waiter.input, clock.now(), waiter),
    retire(lease) {
      const key = keyOf(lease.userId, lease.period);
      if (leases.get(key) === lease) leases.delete(key);
    },
    onSyncError: (err, lease) => opts.onSyncError?.(err, lease.id),
    askOthers: (lease, others, shortfall, maxWaitMs) => opts.peers.ask(lease.accountId!, others, shortfall, maxWaitMs),
    tellSpent: (lease, amount) => opts.peers.tellSpent(lease.accountId!, amount),
  };
}

/** A reservation that did not fit its lease's free units: it waits for a sync of the lease. */
function waitForSync(
  opts: EscrowOptions,
  counts: Counts,
  input: ReserveInput,
  now: Date,
  enqueue: (input: ReserveInput, now: Date, waiter: Waiter) => void,
): Promise<ReserveResult> {
  const arrivedAt = performance.now();
  // How long the reservations that needed the database waited for it, whatever their answer (the fleet bench's
  // share and tail of waits, and the histogram gateway_ledger_admission_wait_seconds).
  let timed = false;
  const answered = () => {
    if (timed) return;
    timed = true;
    counts.waits++;
    opts.metrics.waited((performance.now() - arrivedAt) / 1000);
  };
  return new Promise((resolve, reject) => {
    const waiter: Waiter = {
      input,
      now,
      cancelled: false,
      deadlineAt: arrivedAt + opts.admissionTimeoutMs,
      resolve(result) {
        clearTimeout(deadline);
        answered();
        resolve(result);
      },
      reject(err) {
        clearTimeout(deadline);
        answered();
        reject(err);
      },
    };
    // Only a reservation that needs the database waits for it, and not for longer than this.
    const deadline = setTimeout(() => {
      waiter.cancelled = true;
      answered();
      const err = new DatabaseUnavailableError();
      // A stalled database fails no statement; a deadline missed is how the operator hears of it.
      opts.health.failed(err, "reservation");
      reject(err);
    }, opts.admissionTimeoutMs);
    enqueue(input, now, waiter);
  });
}

/** An escrow's sweep, and what it does to every lease at once. */
function escrowUpkeep(
  opts: EscrowOptions,
  leases: LeasesByAccount,
  all: Set<Lease>,
  holds: Map<string, Reservation>,
  counts: Counts,
): Pick<Escrow, "sweep" | "fence" | "yieldOn" | "spentOn" | "flush" | "close" | "stats"> {
  const { clock, metrics } = opts;
  const maxHoldMs = opts.maxHoldSeconds * 1000;

  async function settleAll() {
    for (;;) {
      const busy = [...all];
      await Promise.all(busy.map((lease) => lease.idle()));
      if (busy.every((lease) => !lease.busy())) return;
    }
  }

  return {
    sweep() {
      const now = clock.now().getTime();
      const nowMs = performance.now();
      for (const lease of all) lease.withdrawOverdue(nowMs);
      for (const lease of leases.values()) if (now - lease.lastUsedMs > opts.idleMs) lease.retire();
      for (const r of holds.values()) {
        if (!r.expired && now - r.reservedAt.getTime() > maxHoldMs) {
          r.expired = true;
          r.lease.expire(r.amount);
          metrics.expired();
        }
      }
      // An ended lease stays while its requests may still settle through it (and their deadlines be watched).
      for (const lease of all) if (lease.finished()) all.delete(lease);
    },
    fence() {
      for (const lease of [...leases.values()]) lease.fence();
    },
    async yieldOn(accountId, wanted) {
      let given: bigint | null = null;
      for (const lease of leases.values()) if (lease.accountId === accountId) given = (given ?? 0n) + (await lease.yieldFree(wanted));
      return given;
    },
    spentOn(accountId, amount) {
      for (const lease of leases.values()) if (lease.accountId === accountId) lease.markSpent(amount);
    },
    async flush() {
      for (const lease of all) if (!lease.ended && !lease.poisoned) lease.giveBackFree();
      await settleAll();
    },
    async close() {
      // Waiters of a retired lease move to a new one: retired in turn, until none is left open.
      while ([...all].some((lease) => !lease.ended && !lease.poisoned && !lease.retired)) {
        for (const lease of all) if (!lease.ended && !lease.poisoned) lease.retire();
        await settleAll();
      }
      await settleAll();
    },
    stats() {
      let leaseCount = 0;
      let free = 0n;
      for (const lease of all) {
        if (lease.ended || lease.poisoned) continue;
        leaseCount++;
        free += lease.free;
      }
      let held = 0n;
      for (const r of holds.values()) if (!r.expired) held += r.amount;
      return { kind: opts.kind, leases: leaseCount, holds: holds.size, held, free, waits: counts.waits, syncs: counts.syncs };
    },
  };
}
