import type { Pool } from "../db/pool.js";

// The expiry of what nobody will resolve: the leases of processes presumed dead, and durable holds past their
// expiry. Their units return to the accounts' pending debits, once: the rows move from pending in the same
// statement. A late settlement still posts its charge (lease-sql.ts, durable-sql.ts).
//
// Heartbeats are compared with the database's clock, which wrote them: a skewed clock of the process running
// the expiry must not expire the leases of live processes. A durable hold's expiry was computed from the
// gateway's clock and is compared with it ($2).
// SKIP LOCKED leaves a lease or hold being resolved right now to that statement; accounts are locked in id
// order so that two overlapping expiry runs cannot deadlock. Instance rows silent for a day are forgotten here
// too (a returning process re-creates its row on its next heartbeat).
const EXPIRE = `
with expired as (
  update quota_leases l set status = 'expired', resolved_at = now()
  where l.status = 'pending' and l.id in (
    select c.id from quota_leases c
    left join gateway_instances i on i.id = c.instance_id
    where c.status = 'pending' and (i.id is null or i.last_seen_at < now() - $1::int * interval '1 second')
    for update of c skip locked
  )
  returning l.account_id, l.amount
), expired_holds as (
  update quota_holds h set status = 'expired', resolved_at = now()
  where h.id in (
    select c.id from quota_holds c
    where c.status = 'pending' and c.lease_id is null and c.expires_at <= $2::timestamptz
    for update of c skip locked
  )
  returning h.account_id, h.amount
), released as (
  select account_id, sum(amount)::bigint as amount from (select * from expired union all select * from expired_holds) e group by account_id
), locked as (
  select a.id, released.amount from quota_accounts a join released on released.account_id = a.id
  order by a.id
  for update of a
), credited as (
  update quota_accounts a set debits_pending = a.debits_pending - locked.amount, updated_at = now()
  from locked where a.id = locked.id
), forgotten as (
  delete from gateway_instances where last_seen_at < now() - interval '1 day'
)
select (select count(*) from expired)::int as leases, (select count(*) from expired_holds)::int as durable`;

export async function expireRows(pool: Pool, instanceTimeoutSeconds: number, now: Date): Promise<{ leases: number; durable: number }> {
  const { rows } = await pool.query<{ leases: number; durable: number }>({
    name: "quota_expire",
    text: EXPIRE,
    values: [instanceTimeoutSeconds, now],
  });
  return rows[0]!;
}
