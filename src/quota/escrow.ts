import { randomUUID } from "node:crypto";
import type { Pool } from "../db/pool.js";
import { Lease, type LeaseContext, type Waiter } from "./lease.js";
import { HoldResolvedError, type AccountKind, type ReserveInput, type ReserveResult } from "./types.js";

// Reservations are admitted in memory against this process's lease on the account (lease.ts), so a request
// that fits costs no database round trip; only leases are reserved in the database, atomically across
// processes, so the processes together never hold more than the allowance. Every request is still written
// to the ledger (quota_holds) when it resolves, in the sync of its lease. docs/billing.md, "Escrow".

export interface EscrowOptions {
  pool: Pool;
  kind: AccountKind;
  /** The period of the account a reservation made at `now` draws on. */
  periodOf: (now: Date) => string;
  maxHoldSeconds: number;
  /** A lease without reservations for this long gives its units back and closes. */
  idleMs?: number;
  /** How often idle leases and over-age reservations are looked for. */
  sweepMs?: number;
  onSyncError?: (err: unknown, leaseId: string) => void;
}

export interface Escrow {
  reserve(input: ReserveInput): Promise<ReserveResult>;
  /** Posts `charged`, or voids the reservation (null). Resolves once the ledger has it. */
  resolve(holdId: string, charged: bigint | null): Promise<void>;
  /** Whether `holdId` is an unresolved reservation of this escrow. */
  owns(holdId: string): boolean;
  /** Gives every lease's free units back and waits until every sync has been applied. */
  flush(): Promise<void>;
  /** Stops the sweep, closes every lease (outstanding requests still settle) and waits for the syncs. */
  close(): Promise<void>;
}

interface Reservation {
  lease: Lease;
  requestId: string;
  amount: bigint;
  reservedAt: Date;
  expired: boolean;
}

export function createEscrow(opts: EscrowOptions): Escrow {
  const idleMs = opts.idleMs ?? 2000;
  const maxHoldMs = opts.maxHoldSeconds * 1000;
  // Per account (user and UTC day): the lease taking new reservations.
  const leases = new Map<string, Lease>();
  // Every lease with work left, retired ones included, so that flush() and close() can wait for them.
  const all = new Set<Lease>();
  const holds = new Map<string, Reservation>();
  const keyOf = (userId: string, period: string) => `${userId}/${period}`;

  const context = (instanceId: string): LeaseContext => ({
    pool: opts.pool,
    kind: opts.kind,
    instanceId,
    admit(lease, waiter) {
      lease.hold(waiter.input.amount);
      return { ok: true, hold: record(lease, waiter.input, waiter.now) };
    },
    retry: (waiter) => enqueue(waiter.input, waiter.now, waiter),
    retire(lease) {
      const key = keyOf(lease.userId, lease.period);
      if (leases.get(key) === lease) leases.delete(key);
    },
    onSyncError: (err, lease) => opts.onSyncError?.(err, lease.id),
  });

  /** The day's allowance of a daily reservation; null for an account whose credits the operator sets. */
  const allowanceOf = (input: ReserveInput): bigint | null => ("dailyAllowance" in input ? input.dailyAllowance : null);

  function leaseFor(userId: string, allowance: bigint | null, instanceId: string, period: string): Lease {
    const key = keyOf(userId, period);
    let lease = leases.get(key);
    if (!lease) {
      lease = new Lease(context(instanceId), userId, period, allowance);
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
    const allowance = allowanceOf(input);
    const lease = leaseFor(input.userId, allowance, input.instanceId, opts.periodOf(now));
    if (lease.allowance !== allowance) lease.reallow(allowance);
    lease.wait(waiter);
  }

  function reserve(input: ReserveInput): Promise<ReserveResult> {
    if (input.amount < 0n) return Promise.reject(new RangeError(`cannot hold a negative amount (${input.amount})`));
    const now = input.now ?? new Date();
    const allowance = allowanceOf(input);
    const lease = leaseFor(input.userId, allowance, input.instanceId, opts.periodOf(now));
    if (lease.allowance === allowance && lease.tryTake(input.amount, now.getTime())) {
      return Promise.resolve({ ok: true, hold: record(lease, input, now) });
    }
    return new Promise((resolve, reject) => enqueue(input, now, { input, now, resolve, reject }));
  }

  function resolve(holdId: string, charged: bigint | null): Promise<void> {
    const reservation = holds.get(holdId);
    if (!reservation) return Promise.reject(new HoldResolvedError(holdId));
    holds.delete(holdId);
    const { lease, amount, requestId, reservedAt } = reservation;
    const resolution = { holdId, requestId, amount, charged, reservedAt };
    if (!lease.poisoned) return lease.resolve(resolution, reservation.expired);
    // Its lease can no longer sync: post through the account's current lease (its units stay held in the
    // database until this process stops and the lease expires: conservative, never free).
    const current = leaseFor(lease.userId, lease.allowance, lease.instanceId, lease.period);
    return current.resolve(resolution, true);
  }

  const sweep = setInterval(() => {
    const now = Date.now();
    for (const lease of leases.values()) if (now - lease.lastUsedMs > idleMs) lease.retire();
    for (const r of holds.values()) {
      if (!r.expired && now - r.reservedAt.getTime() > maxHoldMs) {
        r.expired = true;
        r.lease.expire(r.amount);
      }
    }
    for (const lease of all) if (lease.ended || lease.poisoned) all.delete(lease);
  }, opts.sweepMs ?? 1000);
  sweep.unref();

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
    async flush() {
      for (const lease of all) if (!lease.ended && !lease.poisoned) lease.giveBackFree();
      await settleAll();
    },
    async close() {
      clearInterval(sweep);
      for (const lease of all) if (!lease.ended && !lease.poisoned) lease.retire();
      await settleAll();
    },
  };
}
