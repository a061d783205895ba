import type pg from "pg";
import type { Pool } from "../db/pool.js";
import { inTransaction } from "../db/transaction.js";
import { unfoldedPosted, type AccountKey } from "./account-sql.js";

// A restoration (docs/billing.md, "Restorations"): units added to an account's `restored`, on top of its base
// credits, with its record, in one statement under the account's row lock. The base credits of the day's
// allowance are the plan's and are set on every lease sync; restorations are a column of their own that no
// sync touches, so a reserve reset or a received transfer survives every process's next sync.
//
// Idempotent by (source, reference): `on conflict do nothing` sees a restoration committed concurrently, and
// only an inserted record moves the account. With `up_to_spent` the amount is at most what was spent and not
// yet restored (`posted - restored`, its open leases' unfolded posts included), so a restoration never lifts the
// account above its base credits. The unfolded posts are read only on an account locked by an earlier statement
// of the transaction (LOCK, account-sql.ts unfoldedPosted): a fold that committed while the lock was awaited is
// then in this statement's snapshot, and none can come after it.
const LOCK = `
select 1 from quota_accounts where user_id = $1::uuid and kind = $2::text and period = $3::text for no key update`;

const RESTORE = `
with account as (
  select id, restored, debits_posted from quota_accounts
  where user_id = $1::uuid and kind = $2::text and period = $3::text
  for no key update
), amount as (
  select id, case when $5::bool then least($4::bigint, greatest(debits_posted + ${unfoldedPosted("account.id")} - restored, 0)) else $4::bigint end as n
  from account
), inserted as (
  insert into quota_restorations (account_id, amount, source, reference)
  select id, n, $6::text, $7::text from amount
  on conflict (source, reference) do nothing
  returning account_id, amount
), booked as (
  update quota_accounts a set restored = a.restored + i.amount, updated_at = now() from inserted i where a.id = i.account_id
)
select account.id::text as account_id, (select amount from inserted)::text as applied from account`;

const EARLIER = `select account_id::text, amount::text from quota_restorations where source = $1::text and reference = $2::text`;

export interface RestoreRow extends AccountKey {
  amount: bigint;
  upToSpent: boolean;
  source: string;
  reference: string;
}

export type RestoreOutcome = { account: "missing" } | { account: "found"; accountId: string; applied: bigint | null };

/**
 * `applied` is null when this source and reference had been restored before (read it with earlierRestoration).
 * On a transaction's client, it commits with the transaction (a reserve reset's use, resets-sql.ts, or a transfer's
 * completion, which holds the account's lock already).
 */
export async function restoreRow(pool: Pool | pg.PoolClient, r: RestoreRow): Promise<RestoreOutcome> {
  if (!r.upToSpent) return restoreStatement(pool, r);
  // On the pool: a transaction of its own holds the lock from the first statement to the second.
  if (!("release" in pool)) return inTransaction(pool, (client) => restoreRow(client, r));
  await pool.query({ name: "quota_restore_lock", text: LOCK, values: [r.userId, r.kind, r.period] });
  return restoreStatement(pool, r);
}

async function restoreStatement(pool: Pool | pg.PoolClient, r: RestoreRow): Promise<RestoreOutcome> {
  const { rows } = await pool.query<{ account_id: string; applied: string | null }>({
    name: "quota_restore",
    text: RESTORE,
    values: [r.userId, r.kind, r.period, String(r.amount), r.upToSpent, r.source, r.reference],
  });
  const row = rows[0];
  if (!row) return { account: "missing" };
  return { account: "found", accountId: row.account_id, applied: row.applied === null ? null : BigInt(row.applied) };
}

export async function earlierRestoration(
  pool: Pool,
  source: string,
  reference: string,
): Promise<{ accountId: string; amount: bigint } | undefined> {
  const { rows } = await pool.query<{ account_id: string; amount: string }>(EARLIER, [source, reference]);
  const row = rows[0];
  return row && { accountId: row.account_id, amount: BigInt(row.amount) };
}
