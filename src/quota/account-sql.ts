import type { Pool, Queryable } from "../db/pool.js";

// The account row outside of leases: made sure of before a statement that needs it, and read.

// Creates the account with its base credits (0 for a balance never credited), or touches nothing when it
// exists; `do update` (a no-op) makes RETURNING see an account another process created first.
const ENSURE = `
insert into quota_accounts (user_id, kind, period, credits, credits_revision) values ($1::uuid, $2::text, $3::text, $4::bigint, $5::bigint)
on conflict (user_id, kind, period) do update set updated_at = quota_accounts.updated_at
returning id::text`;

const READ = `
select id::text, credits::text, restored::text, debits_posted::text, debits_pending::text from quota_accounts
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
