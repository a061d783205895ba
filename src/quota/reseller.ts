import type { Queryable } from "../db/pool.js";

// The reseller USD balance: an account of kind `reseller_usd` (account-kinds.ts) whose credits only the operator
// raises (leases keep them as they are; lease-sql.ts). Reserved, settled and released like the daily allowance,
// through the escrow.

// One statement: the credit's record and the account's new credits commit together. The account row lock
// orders it with the leases' syncs, which keep whatever credits they find.
const CREDIT = `
with credit as (
  insert into reseller_credits (user_id, amount, note) values ($1::uuid, $2::bigint, $3::text)
)
insert into quota_accounts (user_id, kind, period, credits) values ($1::uuid, $4::text, $5::text, $2::bigint)
on conflict (user_id, kind, period) do update set credits = quota_accounts.credits + excluded.credits, updated_at = now()
returning id::text, credits::text, restored::text, debits_posted::text, debits_pending::text`;

export interface CreditedRow {
  id: string;
  credits: bigint;
  restored: bigint;
  posted: bigint;
  pending: bigint;
}

export async function creditResellerRow(
  pool: Queryable,
  userId: string,
  amount: bigint,
  note: string,
  account: { kind: string; period: string },
): Promise<CreditedRow> {
  if (amount <= 0n) throw new RangeError(`a credit must be positive, got ${amount}`);
  const { rows } = await pool.query<{ id: string; credits: string; restored: string; debits_posted: string; debits_pending: string }>(
    CREDIT,
    [userId, String(amount), note, account.kind, account.period],
  );
  const row = rows[0]!;
  return {
    id: row.id,
    credits: BigInt(row.credits),
    restored: BigInt(row.restored),
    posted: BigInt(row.debits_posted),
    pending: BigInt(row.debits_pending),
  };
}
