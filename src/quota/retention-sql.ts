import type { Pool } from "../db/pool.js";
import { inTransaction } from "../db/transaction.js";
import { cutoffDaysAgo, deleteInBatches } from "../db/retention.js";

// The ledger's retention (docs/billing.md, "Retention"): resolved holds and ended leases older than the cutoff
// are deleted, and the account still reconciles (reconcile-sql.ts). Accounts, restorations and reseller credits
// are kept: they are the accounts' history, one row per account or operation.

// Aggregate before deleting, in one statement: the rows deleted are exactly the rows added to the rollup, or
// neither happens. Only resolved holds go (a pending durable hold still counts in its account's pending debits);
// an expired durable hold can still be posted late, which moves its resolved_at to the post, so only one
// expired before the cutoff goes, and posting it afterwards finds no hold.
// Locks: SKIP LOCKED leaves a hold being posted right now to that statement (whose resolved_at then moves past
// the cutoff); the rollup rows are written in account order, so that two runs at once cannot deadlock. The
// rollup's foreign key takes a key-share lock on the account, which lease syncs (no key update) never block.
const DELETE_HOLDS = `
with gone as (
  delete from quota_holds where id in (
    select id from quota_holds
    where status in ('posted', 'voided', 'expired') and resolved_at < $1::timestamptz
    limit $2::int
    for update skip locked
  )
  returning account_id, status, charged
), summed as (
  select account_id, count(*) as holds, coalesce(sum(charged) filter (where status = 'posted'), 0)::bigint as charged
  from gone group by account_id
), rolled as (
  insert into quota_hold_rollups (account_id, holds, charged)
  select account_id, holds, charged from summed order by account_id
  on conflict (account_id) do update
  set holds = quota_hold_rollups.holds + excluded.holds, charged = quota_hold_rollups.charged + excluded.charged
)
select count(*)::int as deleted from gone`;

// An ended lease carries no balance (its units went back when it closed or expired), so it needs no rollup. But
// quota_holds.lease_id cascades: deleting a lease a hold still refers to would delete that hold and its charge
// with it. So a lease goes only when no hold refers to it, checked twice: when it is picked, and again after it
// is locked, in a statement of its own. Its own statement because a snapshot taken before the lock could miss a
// hold that a late sync of the lease (an expired lease still posts) committed meanwhile; once the lease is
// locked, no sync can write one (a sync locks the lease first, and a hold's foreign key needs a key-share
// lock on it). SKIP LOCKED leaves a lease being synced right now alone.
const LOCK_LEASES = `
select l.id from quota_leases l
where l.status in ('closed', 'expired') and l.resolved_at < $1::timestamptz
  and not exists (select from quota_holds h where h.lease_id = l.id)
limit $2::int
for update of l skip locked`;

const DELETE_LEASES = `
delete from quota_leases l
where l.id = any($1::uuid[]) and not exists (select from quota_holds h where h.lease_id = l.id)`;

async function deleteHolds(pool: Pool, cutoff: string, batchRows: number): Promise<number> {
  const { rows } = await pool.query<{ deleted: number }>({
    name: "quota_retention_holds",
    text: DELETE_HOLDS,
    values: [cutoff, batchRows],
  });
  return rows[0]!.deleted;
}

async function deleteLeases(pool: Pool, cutoff: string, batchRows: number): Promise<number> {
  return inTransaction(pool, async (client) => {
    const locked = await client.query<{ id: string }>({
      name: "quota_retention_lock_leases",
      text: LOCK_LEASES,
      values: [cutoff, batchRows],
    });
    const ids = locked.rows.map((r) => r.id);
    return ids.length === 0
      ? 0
      : ((await client.query({ name: "quota_retention_leases", text: DELETE_LEASES, values: [ids] })).rowCount ?? 0);
  });
}

export interface LedgerRetention {
  /** Resolved holds deleted (and added to quota_hold_rollups). */
  holds: number;
  /** Ended leases deleted. */
  leases: number;
  /** What was older was deleted: ISO 8601, by the database's clock. */
  cutoff: string;
}

/**
 * Deletes the holds resolved and the leases ended more than `days` days ago, in batches of `batchRows`. Running it
 * again deletes nothing new; it is safe alongside serving processes and another run.
 */
export async function pruneLedger(pool: Pool, days: number, batchRows: number): Promise<LedgerRetention> {
  const cutoff = await cutoffDaysAgo(pool, days);
  // Holds first: a lease goes only once no hold refers to it.
  const holds = await deleteInBatches(batchRows, () => deleteHolds(pool, cutoff, batchRows));
  const leases = await deleteInBatches(batchRows, () => deleteLeases(pool, cutoff, batchRows));
  return { holds, leases, cutoff };
}
