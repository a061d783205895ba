import type { Pool } from "../db/pool.js";
import { nextResetAt, utcDay } from "./day.js";
import { createReserver } from "./reserve-batch.js";
import { createHoldResolver } from "./settle-batch.js";
import {
  type AccountKind,
  type DailyBalance,
  type QuotaLedger,
  type ReserveInput,
  type ReserveResult,
} from "./types.js";

// Every statement here is one round trip (reserve and settle run on every billed request) and is atomic across
// gateway processes by itself: row locks and the re-check PostgreSQL does on a row changed by a concurrent
// writer (READ COMMITTED) decide every race, so no explicit transaction is needed. Reservations of one account
// (reserve-batch.ts), and settlements and releases (settle-batch.ts), share one statement per batch.

const DAILY: AccountKind = "daily_allowance";

const BALANCE = `
select debits_posted, debits_pending from quota_accounts
where user_id = $1::uuid and kind = $2::text and period = $3::text`;

// Without an explicit time the database clock decides, because heartbeats are written with it too: a skewed
// worker clock must not expire the holds of live processes.
// SKIP LOCKED leaves a hold that is being settled or released right now to that statement; accounts are
// locked in id order so that two overlapping expiry runs cannot deadlock. Instance rows silent for a day are
// forgotten here too (a returning process re-creates its row on the next heartbeat).
const EXPIRE = `
with clock as (select coalesce($1::timestamptz, now()) as now),
expired as (
  update quota_holds h set status = 'expired', resolved_at = (select now from clock)
  where h.status = 'pending' and h.id in (
    select c.id from quota_holds c
    cross join clock
    left join gateway_instances i on i.id = c.instance_id
    where c.status = 'pending'
      and (i.id is null
        or i.last_seen_at < clock.now - $2::int * interval '1 second'
        or c.created_at < clock.now - $3::int * interval '1 second')
    for update of c skip locked
  )
  returning h.account_id, h.amount
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

export function createQuotaLedger(
  pool: Pool,
  opts: { maxHoldSeconds: number; instanceTimeoutSeconds?: number },
): QuotaLedger {
  const instanceTimeoutSeconds = opts.instanceTimeoutSeconds ?? 90;
  const reserveHold = createReserver(pool, DAILY);
  const resolveHold = createHoldResolver(pool);

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

    async reserve(input: ReserveInput): Promise<ReserveResult> {
      if (input.amount < 0n) throw new RangeError(`cannot hold a negative amount (${input.amount})`);
      const now = input.now ?? new Date();
      const outcome = await reserveHold(input, now);
      if (outcome.ok) return { ok: true, hold: { id: outcome.holdId, accountId: outcome.accountId, amount: input.amount } };
      const { used, reserved } = outcome;
      return { ok: false, allowance: input.dailyAllowance, used, reserved, resetsAt: nextResetAt(now) };
    },

    async settle(holdId: string, charged: bigint): Promise<void> {
      // Checked here: a bad charge must not fail the batch it would have joined.
      if (charged < 0n) throw new RangeError(`cannot charge a negative amount (${charged})`);
      return resolveHold(holdId, charged);
    },

    release: (holdId: string): Promise<void> => resolveHold(holdId, null),

    async expireAbandoned(now?: Date): Promise<number> {
      const { rows } = await pool.query<{ n: number }>({
        name: "quota_expire",
        text: EXPIRE,
        values: [now ?? null, instanceTimeoutSeconds, opts.maxHoldSeconds],
      });
      return rows[0]!.n;
    },
  };
}
