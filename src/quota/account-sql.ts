import type { Queryable } from "../db/pool.js";

// The account row outside of leases: made sure of before a statement that needs it, and read.

/**
 * The units the open leases of the account whose id is the SQL expression `account` posted by syncs that only post
 * (lease-sql.ts, postOnlyStatement) and have not folded into its `debits_posted` yet: until then they count in its
 * `debits_pending`. Read without a lock: a concurrent post moves units between the two, never what is free. A
 * statement that locks the account must not read it: if it waited for the lock behind a fold, it would see the
 * account after the fold and the leases before it (a row lock's wait re-reads that row only), counting the folded
 * units twice. It is read in a statement after the one that took the lock (restore-sql.ts, resets-sql.ts).
 */
export const unfoldedPosted = (account: string) => openLeasesSum("posted", account);

/**
 * The units the open leases of the account gave back by syncs that only post and no full sync gathered yet
 * (quota_leases.returned): free, though still counted in its `debits_pending`. Read as unfoldedPosted is.
 */
export const ungatheredReturned = (account: string) => openLeasesSum("returned", account);

const openLeasesSum = (column: "posted" | "returned", account: string) =>
  `(select coalesce(sum(l.${column}), 0) from quota_leases l where l.account_id = ${account} and l.status = 'pending')`;

// Creates the account with its base credits (0 for a balance never credited), or touches nothing when it
// exists; `do update` (a no-op) makes RETURNING see an account another process created first.
const ENSURE = `
insert into quota_accounts (user_id, kind, period, credits, credits_revision) values ($1::uuid, $2::text, $3::text, $4::bigint, $5::bigint)
on conflict (user_id, kind, period) do update set updated_at = quota_accounts.updated_at
returning id::text`;

// Through the view that adds the open leases' unfolded posts to the posted side (schema.ts): one statement, so the
// account and its leases are read at one moment.
const READ = `
select id::text, credits::text, restored::text, debits_posted::text, debits_pending::text from quota_account_balances
where user_id = $1::uuid and kind = $2::text and period = $3::text`;

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

/** The account as its readers see it; undefined when it was never used. On a transaction's client too. */
export async function readAccount(pool: Queryable, key: AccountKey): Promise<AccountRow | undefined> {
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
