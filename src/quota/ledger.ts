import type { Pool } from "../db/pool.js";
import { nextResetAt, utcDay } from "./day.js";
import { createEscrow } from "./escrow.js";
import { RESELLER_KIND, RESELLER_PERIOD, creditReseller, resellerBalance } from "./reseller.js";
import {
  type AccountKind,
  type DailyBalance,
  type QuotaLedger,
  type ReserveInput,
  type ReserveResult,
} from "./types.js";

// Reservations and their resolutions go through an escrow per account kind (escrow.ts): the day's allowance
// and the reseller USD balance are the same mechanism on different accounts. Here are the reads and the expiry.

const DAILY: AccountKind = "daily_allowance";

const BALANCE = `
select debits_posted, debits_pending from quota_accounts
where user_id = $1::uuid and kind = $2::text and period = $3::text`;

// Without an explicit time the database clock decides, because heartbeats are written with it too: a skewed
// worker clock must not expire the leases of live processes.
// SKIP LOCKED leaves a lease that is syncing right now to that statement (its process is alive); accounts are
// locked in id order so that two overlapping expiry runs cannot deadlock. Instance rows silent for a day are
// forgotten here too (a returning process re-creates its row on the next heartbeat).
const EXPIRE = `
with clock as (select coalesce($1::timestamptz, now()) as now),
expired as (
  update quota_leases l set status = 'expired', resolved_at = (select now from clock)
  where l.status = 'pending' and l.id in (
    select c.id from quota_leases c
    cross join clock
    left join gateway_instances i on i.id = c.instance_id
    where c.status = 'pending' and (i.id is null or i.last_seen_at < clock.now - $2::int * interval '1 second')
    for update of c skip locked
  )
  returning l.account_id, l.amount
), locked as (
  select a.id, t.amount from quota_accounts a
  join (select account_id, sum(amount)::bigint as amount from expired group by account_id) t on t.account_id = a.id
  order by a.id
  for update of a
), credited as (
  update quota_accounts a set debits_pending = a.debits_pending - locked.amount, updated_at = (select now from clock)
  from locked where a.id = locked.id
), forgotten as (
  delete from gateway_instances where last_seen_at < (select now from clock) - interval '1 day'
)
select count(*)::int as n from expired`;

export interface LedgerOptions {
  /** A request holding its reservation longer than this has it expired (a late settle still posts). */
  maxHoldSeconds: number;
  /** A process silent this long is presumed dead and its leases expire. */
  instanceTimeoutSeconds?: number;
  /** A lease unused this long gives its units back. */
  leaseIdleMs?: number;
  onSyncError?: (err: unknown, leaseId: string) => void;
}

export function createQuotaLedger(pool: Pool, opts: LedgerOptions): QuotaLedger {
  const instanceTimeoutSeconds = opts.instanceTimeoutSeconds ?? 90;
  const escrowOf = (kind: AccountKind, periodOf: (now: Date) => string) =>
    createEscrow({ pool, kind, periodOf, maxHoldSeconds: opts.maxHoldSeconds, idleMs: opts.leaseIdleMs, onSyncError: opts.onSyncError });
  const daily = escrowOf(DAILY, utcDay);
  const reseller = escrowOf(RESELLER_KIND, () => RESELLER_PERIOD);
  const escrows = [daily, reseller];
  /** The escrow holding a reservation; the daily one (which then reports it resolved) when none does. */
  const holding = (holdId: string) => escrows.find((e) => e.owns(holdId)) ?? daily;

  async function balance(userId: string, dailyAllowance: bigint, now = new Date()): Promise<DailyBalance> {
    const day = utcDay(now);
    const { rows } = await pool.query<{ debits_posted: string; debits_pending: string }>({
      name: "quota_balance",
      text: BALANCE,
      values: [userId, DAILY, day],
    });
    const used = BigInt(rows[0]?.debits_posted ?? 0);
    const reserved = BigInt(rows[0]?.debits_pending ?? 0);
    return {
      day,
      allowance: dailyAllowance,
      used,
      reserved,
      remaining: dailyAllowance - used - reserved,
      resetsAt: nextResetAt(now),
    };
  }

  return {
    balance,

    reserve: (input: ReserveInput): Promise<ReserveResult> => (input.kind === RESELLER_KIND ? reseller : daily).reserve(input),

    async settle(holdId: string, charged: bigint): Promise<void> {
      // Checked here: a bad charge must not reach the sync it would have joined.
      if (charged < 0n) throw new RangeError(`cannot charge a negative amount (${charged})`);
      return holding(holdId).resolve(holdId, charged);
    },

    release: (holdId: string): Promise<void> => holding(holdId).resolve(holdId, null),
    flush: async () => {
      await Promise.all(escrows.map((e) => e.flush()));
    },
    close: async () => {
      await Promise.all(escrows.map((e) => e.close()));
    },
    creditReseller: (userId, amount, note) => creditReseller(pool, userId, amount, note),
    resellerBalance: (userId) => resellerBalance(pool, userId),

    async expireAbandoned(now?: Date): Promise<number> {
      const { rows } = await pool.query<{ n: number }>({
        name: "quota_expire",
        text: EXPIRE,
        values: [now ?? null, instanceTimeoutSeconds],
      });
      return rows[0]!.n;
    },
  };
}
