import type { Pool, TimedQuery } from "../db/pool.js";

// The statement that opens a lease (escrow.ts, docs/billing.md "Escrow"); its syncs are lease-sql.ts's.

// Creates the account if needed (with the stated base credits, or 0 for a balance never credited yet) and an
// empty lease on it. `do update` (a no-op) makes RETURNING see an account another process created first, and
// a lease this very call created before its reply was lost. Runs once per process, account and period.
const OPEN_LEASE = `
with account as (
  insert into quota_accounts (user_id, kind, period, credits, credits_revision)
  values ($2::uuid, $3::text, $4::text, $5::bigint, $7::bigint)
  on conflict (user_id, kind, period) do update set updated_at = quota_accounts.updated_at
  returning id
)
insert into quota_leases (id, account_id, instance_id) select $1::uuid, id, $6::uuid from account
on conflict (id) do update set instance_id = quota_leases.instance_id
returning account_id::text`;

export interface OpenLease {
  leaseId: string;
  userId: string;
  kind: string;
  period: string;
  /** The base credits of an account created here, or null (a balance not credited yet: 0), and their revision. */
  base: bigint | null;
  baseRevision: bigint;
  instanceId: string;
}

/** Returns the account id. */
export async function openLease(pool: Pool, lease: OpenLease, timeoutMs?: number): Promise<string> {
  const query: TimedQuery = {
    name: "quota_open_lease",
    text: OPEN_LEASE,
    values: [lease.leaseId, lease.userId, lease.kind, lease.period, String(lease.base ?? 0n), lease.instanceId, String(lease.baseRevision)],
    query_timeout: timeoutMs,
  };
  const { rows } = await pool.query<{ account_id: string }>(query);
  return rows[0]!.account_id;
}
