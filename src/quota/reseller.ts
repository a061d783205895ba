import type { Pool } from "../db/pool.js";
import type { ResellerBalance } from "./types.js";

// The reseller USD balance: an account of kind `reseller_usd` with one perpetual period, whose credits only the
// operator raises (leases keep them as they are; lease-sql.ts). Reserved, settled and released like the daily
// allowance, through the escrow.

export const RESELLER_KIND = "reseller_usd";
export const RESELLER_PERIOD = "balance";

// One statement: the credit's record and the account's new credits commit together. The account row lock
// orders it with the leases' syncs, which keep whatever credits they find.
const CREDIT = `
with credit as (
  insert into reseller_credits (user_id, amount, note) values ($1::uuid, $2::bigint, $3::text)
)
insert into quota_accounts (user_id, kind, period, credits) values ($1::uuid, '${RESELLER_KIND}', '${RESELLER_PERIOD}', $2::bigint)
on conflict (user_id, kind, period) do update set credits = quota_accounts.credits + excluded.credits, updated_at = now()
returning credits::text, debits_posted::text, debits_pending::text`;

const BALANCE = `
select credits::text, debits_posted::text, debits_pending::text from quota_accounts
where user_id = $1::uuid and kind = '${RESELLER_KIND}' and period = '${RESELLER_PERIOD}'`;

interface Row {
  credits: string;
  debits_posted: string;
  debits_pending: string;
}

function toBalance(row: Row | undefined): ResellerBalance {
  const credited = BigInt(row?.credits ?? 0);
  const spent = BigInt(row?.debits_posted ?? 0);
  const reserved = BigInt(row?.debits_pending ?? 0);
  return { credited, spent, reserved, available: credited - spent - reserved };
}

export async function creditReseller(pool: Pool, userId: string, amount: bigint, note: string): Promise<ResellerBalance> {
  if (amount <= 0n) throw new RangeError(`a credit must be positive, got ${amount}`);
  const { rows } = await pool.query<Row>(CREDIT, [userId, String(amount), note]);
  return toBalance(rows[0]);
}

export async function resellerBalance(pool: Pool, userId: string): Promise<ResellerBalance> {
  const { rows } = await pool.query<Row>(BALANCE, [userId]);
  return toBalance(rows[0]);
}
