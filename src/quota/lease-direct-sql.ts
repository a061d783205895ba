import type { Pool, TimedQuery } from "../db/pool.js";
import { recordsOf, type Journal, type Resolution } from "./lease-sql.js";

// The way out of a lease whose sync got a definitive answer (a data error, a sequence it cannot be at): the
// lease ends (expired, its units back to the account and its posted units folded, as the expiry of a dead
// process's would) and its
// requests' charges post straight to the account, named by its id, so they post even when the lease row is gone
// (the retention removed it: a process frozen for longer than it keeps ended leases). Exactly once by the hold's
// id: only the rows this statement inserts are booked, so a retry after a lost reply, or a resolution already
// written by a sync, books nothing again. The journal's rows are written with them (their request ids are their
// own key). Locks: the lease, then its account, as a sync. An empty call only ends the lease.
function directStatement(journal: Journal | undefined): string {
  return `
with lease as (
  select id, status, amount, posted, returned from quota_leases where id = $1::uuid for update
), ended as (
  update quota_leases l set status = 'expired', posted = 0, returned = 0, resolved_at = now() from lease
  where l.id = lease.id and lease.status = 'pending'
  returning lease.amount, lease.posted, lease.returned
), account as (
  select a.id from quota_accounts a where a.id = $8::bigint for no key update
), resolved as (
  insert into quota_holds (id, account_id, lease_id, amount, charged, status, request_id, instance_id, created_at, resolved_at)
  select r.id, account.id, (select id from lease), r.amount, r.charged, case when r.charged is null then 'voided' else 'posted' end,
    r.request_id, $7::uuid, r.created_at, now()
  from account
  cross join unnest($2::uuid[], $3::bigint[], $4::bigint[], $5::text[], $6::timestamptz[]) as r(id, amount, charged, request_id, created_at)
  on conflict (id) do nothing
  returning charged
), booked as (
  update quota_accounts a
  set debits_posted = a.debits_posted + coalesce((select sum(charged) from resolved), 0) + coalesce((select posted from ended), 0),
      debits_pending = a.debits_pending - coalesce((select amount + posted + returned from ended), 0),
      updated_at = now()
  from account where a.id = account.id
)${
    journal
      ? `, journal as (
${journal.insert("(case when exists (select from account) then $9::json else '[]'::json end)")}
)`
      : ""
  }
select exists (select from account) as found`;
}

/** The account of a direct posting is gone (its user was deleted): its charges have nowhere to post. */
export class AccountGoneError extends Error {
  constructor(accountId: string) {
    super(`account ${accountId} no longer exists`);
    this.name = "AccountGoneError";
  }
}

export type DirectPostFn = (
  pool: Pool,
  leaseId: string,
  accountId: string,
  instanceId: string,
  resolutions: readonly Resolution[],
  withRecords: boolean,
) => Promise<void>;

/** The direct posting of a lease's resolutions (and its end), with journal records written by `journal`. */
export function leaseDirectPost(journal?: Journal, timeoutMs?: number): DirectPostFn {
  const text = directStatement(journal);
  const name = journal ? "quota_direct_post_journal" : "quota_direct_post";
  return async (pool, leaseId, accountId, instanceId, resolutions, withRecords) => {
    const values: unknown[] = [
      leaseId,
      resolutions.map((r) => r.holdId),
      resolutions.map((r) => String(r.amount)),
      resolutions.map((r) => (r.charged === null ? null : String(r.charged))),
      resolutions.map((r) => r.requestId),
      resolutions.map((r) => r.reservedAt),
      instanceId,
      accountId,
    ];
    if (journal) values.push(withRecords ? recordsOf(resolutions) : "[]");
    const query: TimedQuery = { name, text, values, query_timeout: timeoutMs };
    const { rows } = await pool.query<{ found: boolean }>(query);
    if (!rows[0]?.found) throw new AccountGoneError(accountId);
  };
}
