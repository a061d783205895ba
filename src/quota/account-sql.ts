import type { Pool, Queryable } from "../db/pool.js";

// The account row outside of leases: made sure of before a statement that needs it, and read.

/**
 * The units the open leases of the account whose id is the SQL expression `account` posted by syncs that only post
 * (lease-sql.ts, postOnlyStatement) and have not folded into its `debits_posted` yet: until then they count in its
 * `debits_pending`. Read without a lock: a concurrent post moves units between the two, never what is free.
 */
export const unfoldedPosted = (account: string) =>
  `(select coalesce(sum(l.posted), 0) from quota_leases l where l.account_id = ${account} and l.status = 'pending')`;

// Creates the account with its base credits (0 for a balance never credited), or touches nothing when it
// exists; `do update` (a no-op) makes RETURNING see an account another process created first.
const ENSURE = `
insert into quota_accounts (user_id, kind, period, credits, credits_revision) values ($1::uuid, $2::text, $3::text, $4::bigint, $5::bigint)
on conflict (user_id, kind, period) do update set updated_at = quota_accounts.updated_at
returning id::text`;

const READ = `
select a.id::text, a.credits::text, a.restored::text, (a.debits_posted + u.n)::text as debits_posted,
  (a.debits_pending - u.n)::text as debits_pending
from quota_accounts a cross join lateral (select ${unfoldedPosted("a.id")} as n) u
where a.user_id = $1::uuid and a.kind = $2::text and a.period = $3::text`;

export interface AccountKey {
  userId: string;
  kind: string;
  period: string;
}

export interface AccountRow {
  id: string;
  credits: bigint;
  restored: bigint;
  posted: bigint;
  pending: bigint;
}

/**
 * Creates the account with the caller's base credits and their revision (account-kinds.ts, baseRevision), unless it
 * exists. On a transaction's client too (a token transfer creates the days it touches as a lease would).
 */
export async function ensureAccount(pool: Queryable, key: AccountKey, base: bigint | null, baseRevision = 0n): Promise<string> {
  const { rows } = await pool.query<{ id: string }>({
    name: "quota_ensure_account",
    text: ENSURE,
    values: [key.userId, key.kind, key.period, String(base ?? 0n), String(baseRevision)],
  });
  return rows[0]!.id;
}

/** The account's row; undefined when it was never used. */
export async function readAccount(pool: Pool, key: AccountKey): Promise<AccountRow | undefined> {
  const { rows } = await pool.query<{ id: string; credits: string; restored: string; debits_posted: string; debits_pending: string }>({
    name: "quota_read_account",
    text: READ,
    values: [key.userId, key.kind, key.period],
  });
  const row = rows[0];
  return (
    row && {
      id: row.id,
      credits: BigInt(row.credits),
      restored: BigInt(row.restored),
      posted: BigInt(row.debits_posted),
      pending: BigInt(row.debits_pending),
    }
  );
}
