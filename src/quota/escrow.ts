import { randomUUID } from "node:crypto";
import { DatabaseUnavailableError } from "../db/faults.js";
import type { DatabaseHealth } from "../db/health.js";
import type { Pool } from "../db/pool.js";
import type { AccountMetrics, AccountStats } from "../metrics/recorders.js";
import { accountAt, kindSpec } from "./account-kinds.js";
import type { Clock } from "./clock.js";
import type { DirectPostFn, SyncLeaseFn } from "./lease-sql.js";
import { Lease, type LeaseContext, type Waiter } from "./lease.js";
import { HoldResolvedError, type AccountKind, type Instance, type ReserveInput, type ReserveResult } from "./types.js";

// Reservations are admitted in memory against this process's lease on the account (lease.ts), so a request
// that fits costs no database round trip; only leases are reserved in the database, atomically across
// processes, so the processes together never hold more than the account allows. Every request is still written
// to the ledger (quota_holds) when it resolves, in the sync of its lease. docs/billing.md, "Escrow".

export interface EscrowOptions {
  pool: Pool;
  kind: AccountKind;
  clock: Clock;
  instance: Instance;
  sync: SyncLeaseFn;
  directPost: DirectPostFn;
  health: DatabaseHealth;
  /** Shared by every escrow of the process: shutdown's grace ran out. */
  givingUp(): boolean;
  /** Shared by every escrow of the process: settlements not yet committed. */
  unsynced: { count: number };
  /** Above this many unsynced settlements the process admits nothing (a bound on what a kill could lose). */
  maxUnsynced: number;
  /** A reservation that waits for the database longer than this gets 503 database_unavailable. */
  admissionTimeoutMs: number;
  /** A ledger statement whose answer takes longer is abandoned and retried. */
  statementTimeoutMs: number | undefined;
  maxHoldSeconds: number;
  /** A lease without reservations for this long gives its units back and closes. */
  idleMs: number;
  /** How long a settlement may wait for others to share its sync. */
  lingerMs: number;
  onSyncError?: (err: unknown, leaseId: string) => void;
  /** This kind's holds, resolutions, expiries and syncs. */
  metrics: AccountMetrics;
  /** Uses a reserve reset automatically, for a kind resets restore. */
  autoReset?: LeaseContext["autoReset"];
}

export interface Escrow {
  reserve(input: ReserveInput): Promise<ReserveResult>;
  /** Posts `charged`, or voids the reservation (null), with its journal record. Resolves once the ledger has it. */
  resolve(holdId: string, charged: bigint | null, record: string | null): Promise<void>;
  /** Whether `holdId` is an unresolved reservation of this escrow. */
  owns(holdId: string): boolean;
  /** Idle leases give back; reservations older than the maximum hold free their units. */
  sweep(): void;
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

export function createEscrow(opts: EscrowOptions): Escrow {
  const { clock, instance, metrics } = opts;
  const maxHoldMs = opts.maxHoldSeconds * 1000;
  const spec = kindSpec(opts.kind);
  // Per account (user and period): the lease taking new reservations.
  const leases = new Map<string, Lease>();
  // Every lease with work left, retired ones included, so that flush() and close() can wait for them.
  const all = new Set<Lease>();
  const holds = new Map<string, Reservation>();
  const keyOf = (userId: string, period: string) => `${userId}/${period}`;

  const context: LeaseContext = {
    pool: opts.pool,
    kind: opts.kind,
    instanceId: instance.id,
    sync: opts.sync,
    directPost: opts.directPost,
    health: opts.health,
    givingUp: opts.givingUp,
    unsynced: opts.unsynced,
    lingerMs: opts.lingerMs,
    statementTimeoutMs: opts.statementTimeoutMs,
    slowMs: opts.admissionTimeoutMs,
    metrics,
    fresh: () => instance.fresh(),
    beaten: (sentAt) => instance.beaten(sentAt),
    resetsAt: (now) => spec.periodEnd(now),
    admit(lease, waiter) {
      lease.hold(waiter.input.amount);
      metrics.held();
      return { ok: true, hold: record(lease, waiter.input, waiter.now) };
    },
    retry: (waiter) => enqueue(waiter.input, waiter.now, waiter),
    retire(lease) {
      const key = keyOf(lease.userId, lease.period);
      if (leases.get(key) === lease) leases.delete(key);
    },
    onSyncError: (err, lease) => opts.onSyncError?.(err, lease.id),
    autoReset: opts.autoReset,
  };

  function leaseFor(userId: string, base: bigint | null, period: string, nowMs: number): Lease {
    const key = keyOf(userId, period);
    let lease = leases.get(key);
    if (!lease) {
      lease = new Lease(context, userId, period, base, nowMs);
      leases.set(key, lease);
      all.add(lease);
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
    const lease = leaseFor(input.userId, base, period, now.getTime());
    if (lease.base !== base) lease.rebase(base);
    lease.wait(waiter);
  }

  function reserve(input: ReserveInput): Promise<ReserveResult> {
    if (input.amount < 0n) return Promise.reject(new RangeError(`cannot hold a negative amount (${input.amount})`));
    const now = clock.now();
    const nowMs = now.getTime();
    // The usual case, spelled out rather than through accountAt(): no object per request.
    const base = spec.base === "caller" ? input.base : null;
    if (spec.base === "caller" && base === null)
      return Promise.reject(new TypeError(`an account of kind ${opts.kind} needs its base credits`));
    // Settlements piling up unwritten (the database is away): what a kill of this process could lose is bounded.
    if (opts.unsynced.count > opts.maxUnsynced) {
      const err = new DatabaseUnavailableError();
      opts.health.failed(err, "settlements waiting");
      return Promise.reject(err);
    }
    const lease = leaseFor(input.userId, base, spec.period(now, input.scope), nowMs);
    if (lease.base === base && lease.tryTake(input.amount, nowMs, input.weeklyResets != null)) {
      metrics.held();
      return Promise.resolve({ ok: true, hold: record(lease, input, now) });
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        input,
        now,
        cancelled: false,
        resolve(result) {
          clearTimeout(deadline);
          resolve(result);
        },
        reject(err) {
          clearTimeout(deadline);
          reject(err);
        },
      };
      // Only a reservation that needs the database waits for it, and not for longer than this.
      const deadline = setTimeout(() => {
        waiter.cancelled = true;
        const err = new DatabaseUnavailableError();
        // A stalled database fails no statement; a deadline missed is how the operator hears of it.
        opts.health.failed(err, "reservation");
        reject(err);
      }, opts.admissionTimeoutMs);
      enqueue(input, now, waiter);
    });
  }

  function resolve(holdId: string, charged: bigint | null, journalRecord: string | null): Promise<void> {
    const reservation = holds.get(holdId);
    if (!reservation) return Promise.reject(new HoldResolvedError(holdId));
    holds.delete(holdId);
    const { lease, amount, requestId, reservedAt } = reservation;
    if (charged === null) metrics.voided();
    else metrics.posted(charged, amount);
    const resolution = { holdId, requestId, amount, charged, reservedAt, record: journalRecord };
    if (!lease.poisoned) return lease.resolve(resolution, reservation.expired);
    // Its lease can no longer sync (and was ended, its units returned): the charge posts straight to the account.
    return lease.resolveDirectly(resolution);
  }

  function sweep() {
    const now = clock.now().getTime();
    for (const lease of leases.values()) if (now - lease.lastUsedMs > opts.idleMs) lease.retire();
    for (const r of holds.values()) {
      if (!r.expired && now - r.reservedAt.getTime() > maxHoldMs) {
        r.expired = true;
        r.lease.expire(r.amount);
        metrics.expired();
      }
    }
    for (const lease of all) if (lease.ended || lease.poisoned) all.delete(lease);
  }

  async function settleAll() {
    for (;;) {
      const busy = [...all];
      await Promise.all(busy.map((lease) => lease.idle()));
      if (busy.every((lease) => !lease.busy())) return;
    }
  }

  return {
    reserve,
    resolve,
    owns: (holdId) => holds.has(holdId),
    sweep,
    async flush() {
      for (const lease of all) if (!lease.ended && !lease.poisoned) lease.giveBackFree();
      await settleAll();
    },
    async close() {
      for (const lease of all) if (!lease.ended && !lease.poisoned) lease.retire();
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
      return { kind: opts.kind, leases: leaseCount, holds: holds.size, held, free };
    },
  };
}
