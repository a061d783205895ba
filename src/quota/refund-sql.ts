import type { Queryable, TimedQuery } from "../db/pool.js";
import { recordsOf, type Journal, type Resolution } from "./lease-sql.js";

// A charge withdrawn after all (docs/billing.md, "Settlement"): its caller stopped waiting while the statement
// carrying it was in flight, the client was answered 503 "nothing was charged", and the statement turned out to
// have committed. The refund makes that true: the posted hold becomes a void, the account's posted debits give its
// charge back, and the request-log row becomes the 503 it was answered, in one statement. The charge may still sit
// on its lease as posted units (lease-sql.ts, postOnlyStatement): the holds' leases are folded into their accounts
// first, so the account's posted debits hold every charge given back.
//
// Exactly once: only a hold still posted is undone, and only the rows of holds this statement undid are rewritten,
// so a retry after a lost reply changes nothing. Locks: the holds, then their leases, then their account (the lease
// sync locks its lease, then the account). A sync's insert of a hold waits on an existing one only for the same id,
// which a lease sends again only in its own attempts, never beside its refund; a deadlock there would be a 40P01,
// which is retried.
function refundStatement(journal: Journal | undefined): string {
  const undone = `(select coalesce(json_agg(x), '[]'::json) from json_array_elements($2::json) x
    where x->>'request_id' in (select request_id from undone))`;
  return `
with target as (
  select id, account_id, lease_id, charged, request_id from quota_holds where id = any($1::uuid[]) and status = 'posted' for update
), leases as (
  select id, account_id, posted from quota_leases where id in (select lease_id from target) and posted > 0 order by id for update
), folded as (
  update quota_leases l set posted = 0 from leases where l.id = leases.id
), undone as (
  update quota_holds h set status = 'voided', charged = null, resolved_at = now() from target t where h.id = t.id
  returning t.account_id, t.charged, t.request_id
), totals as (
  select account_id, sum(charged)::bigint as total,
    (select coalesce(sum(posted), 0) from leases where leases.account_id = undone.account_id)::bigint as folding
  from undone group by account_id
), booked as (
  update quota_accounts a set debits_posted = a.debits_posted + t.folding - t.total, debits_pending = a.debits_pending - t.folding,
    updated_at = now()
  from totals t where a.id = t.account_id
)${journal ? `, journal as (\n${journal.rewrite(undone)}\n)` : ""}
select count(*)::int as refunded from undone`;
}

export type RefundFn = (db: Queryable, refunds: readonly Resolution[]) => Promise<number>;

/** Refunds the holds of `refunds` (their records are the withdrawn ones: the 503 rows). */
export function leaseRefund(journal?: Journal, timeoutMs?: number): RefundFn {
  const text = refundStatement(journal);
  return async (db, refunds) => {
    const values: unknown[] = [refunds.map((r) => r.holdId)];
    if (journal) values.push(recordsOf(refunds));
    const query: TimedQuery = { name: journal ? "quota_refund_journal" : "quota_refund", text, values, query_timeout: timeoutMs };
    const { rows } = await db.query<{ refunded: number }>(query);
    return rows[0]!.refunded;
  };
}
