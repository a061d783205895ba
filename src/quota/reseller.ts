import type { Queryable } from "../db/pool.js";
import { readAccount, type AccountRow } from "./account-sql.js";

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
returning id::text`;

/**
 * Credits the balance and reads it back in a statement of its own: that read's snapshot follows the credit and
 * sees the account and its leases at one moment (a statement that waited for the row's lock would read the leases'
 * unfolded posts as they were before it waited).
 */
export async function creditResellerRow(
  pool: Queryable,
  userId: string,
  amount: bigint,
  note: string,
  account: { kind: string; period: string },
): Promise<AccountRow> {
  if (amount <= 0n) throw new RangeError(`a credit must be positive, got ${amount}`);
  await pool.query(CREDIT, [userId, String(amount), note, account.kind, account.period]);
  return (await readAccount(pool, { userId, kind: account.kind, period: account.period }))!;
}
