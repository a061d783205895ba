import type { Pool } from "../db/pool.js";

// The expiry of what nobody will resolve: the leases of processes presumed dead, and durable holds past their
// expiry. Their units return to the accounts' pending debits, once: each row moves from pending in the statement
// that returns its units (a lease's posted units fold into the posted debits there). A late settlement still posts
// its charge (lease-sql.ts, durable-sql.ts).
//
// Three steps, each a statement of its own, so that none can abort another's work:
//   1. fence: processes whose heartbeat is older than the timeout are fenced (instances.ts, "Fencing"). The UPDATE
//      reads the heartbeat again on the row's latest version under its lock, so a sync or beat that renewed it
//      first wins, and one that comes after finds the row fenced and is told so. Heartbeats are compared with the
//      database's clock, which wrote them.
//   2. the pending leases of fenced (or forgotten) processes, one statement each: the lease locked (skipped while
//      a sync holds it: the next run takes it), then its account, the order of every sync. A process is fenced
//      for good, so reading which ones are fenced from a snapshot is never stale in the wrong direction.
//   3. durable holds past their expiry (by the ledger's clock, which computed it), one statement each, the hold
//      then its account, as their own statements do.
// Instance rows silent for a day are forgotten (a fenced process registers anew under another id).

const FENCE = `
update gateway_instances set fenced_at = now()
where fenced_at is null and last_seen_at < now() - $1::int * interval '1 second'
returning id`;

const ORPHANED_LEASES = `
select l.id from quota_leases l left join gateway_instances i on i.id = l.instance_id
where l.status = 'pending' and (i.id is null or i.fenced_at is not null)
limit $1::int`;

const EXPIRE_LEASE = `
with lease as (
  select id, account_id, amount, posted, returned from quota_leases where id = $1::uuid and status = 'pending' for update skip locked
), account as (
  select a.id from quota_accounts a join lease on a.id = lease.account_id for no key update of a
), ended as (
  update quota_leases l set status = 'expired', posted = 0, returned = 0, resolved_at = now() from lease where l.id = lease.id
  returning lease.account_id, lease.amount, lease.posted, lease.returned
)
update quota_accounts a set debits_posted = a.debits_posted + ended.posted,
  debits_pending = a.debits_pending - ended.amount - ended.posted - ended.returned, updated_at = now()
from ended where a.id = ended.account_id
returning a.id`;

const OVERDUE_HOLDS = `
select id from quota_holds where status = 'pending' and lease_id is null and expires_at <= $1::timestamptz limit $2::int`;

const EXPIRE_HOLD = `
with hold as (
  select id, account_id, amount from quota_holds
  where id = $1::uuid and status = 'pending' and lease_id is null and expires_at <= $2::timestamptz
  for update skip locked
), account as (
  select a.id from quota_accounts a join hold on a.id = hold.account_id for no key update of a
), ended as (
  update quota_holds h set status = 'expired', resolved_at = now() from hold where h.id = hold.id
  returning hold.account_id, hold.amount
)
update quota_accounts a set debits_pending = a.debits_pending - ended.amount, updated_at = now()
from ended where a.id = ended.account_id
returning a.id`;

const FORGET = `delete from gateway_instances where last_seen_at < now() - interval '1 day'`;

/** Rows looked at per run and step: a backlog is worked off over the next runs. */
const BATCH = 1000;

export interface ExpiryCounts {
  /** Processes fenced by this run. */
  fenced: number;
  leases: number;
  durable: number;
}

export async function expireRows(pool: Pool, instanceTimeoutSeconds: number, now: Date): Promise<ExpiryCounts> {
  const fenced = (await pool.query({ name: "quota_fence", text: FENCE, values: [instanceTimeoutSeconds] })).rowCount ?? 0;
  let leases = 0;
  const orphaned = await pool.query<{ id: string }>({ name: "quota_orphaned_leases", text: ORPHANED_LEASES, values: [BATCH] });
  for (const { id } of orphaned.rows) {
    leases += (await pool.query({ name: "quota_expire_lease", text: EXPIRE_LEASE, values: [id] })).rowCount ?? 0;
  }
  let durable = 0;
  const overdue = await pool.query<{ id: string }>({ name: "quota_overdue_holds", text: OVERDUE_HOLDS, values: [now, BATCH] });
  for (const { id } of overdue.rows) {
    durable += (await pool.query({ name: "quota_expire_hold", text: EXPIRE_HOLD, values: [id, now] })).rowCount ?? 0;
  }
  await pool.query({ name: "quota_forget_instances", text: FORGET });
  return { fenced, leases, durable };
}
