import type { Pool, TimedQuery } from "../db/pool.js";

// The two statements of the escrow (escrow.ts, docs/billing.md "Escrow"). Each is atomic across gateway
// processes by itself: the account row lock decides every race, so no explicit transaction is needed.

// Creates the account if needed (with the stated base credits, or 0 for a balance never credited yet) and an
// empty lease on it. `do update` (a no-op) makes RETURNING see an account another process created first, and
// a lease this very call created before its reply was lost. Runs once per process, account and period.
const OPEN_LEASE = `
with account as (
  insert into quota_accounts (user_id, kind, period, credits) values ($2::uuid, $3::text, $4::text, $5::bigint)
  on conflict (user_id, kind, period) do update set updated_at = quota_accounts.updated_at
  returning id
)
insert into quota_leases (id, account_id, instance_id) select $1::uuid, id, $6::uuid from account
on conflict (id) do update set instance_id = quota_leases.instance_id
returning account_id::text`;

/**
 * The journal: an INSERT that commits each resolved request's record (its request-log row) in the same
 * statement as its charge, reading the records from the JSON array `param`. Supplied by the composition root,
 * so that the ledger names no table of another feature.
 */
export type Journal = (param: string) => string;

// One sync of a lease: posts settled charges (`post`, of which `take` came out of the lease), writes the
// resolved requests' rows (and their journal records), gives back `give_back` unused units, then grants `need`
// plus up to `headroom` more if the account has them (at most a quarter of what is left after `need`, so that
// other processes still find some), or whatever is left when that is less than `need`. `close` gives
// everything back and ends the lease. What is left is `credits + restored - posted - pending`.
//
// The base ($6) sets the account's base credits each sync (a plan change applies at once); null keeps the
// credits the account has (a reseller balance, credited by the operator). Restorations are never touched here.
//
// Applied only if `seq` is the lease's next number: a retry after a lost reply finds its own number and gets
// the stored grant back instead of a second effect (the journal's rows are written only when applied, and
// are idempotent by their own key besides). A lease that is no longer pending (expired: its process was
// presumed dead, and the expiry already returned its units) still posts charges, and takes, gives and grants
// nothing. `touch` also renews this process's heartbeat, for a process whose heartbeat went stale (instances.ts).
// Locks: the lease, then its account; the expiry skips locked leases, so the two cannot deadlock.
function syncStatement(journal: Journal | undefined): string {
  const records = "(case when exists (select from fresh) then $17::json else '[]'::json end)";
  return `
with lease as (
  select id, account_id, status, seq, last_grant from quota_leases where id = $1::uuid for update
), fresh as (
  select * from lease where seq = $2::int - 1
), account as (
  select a.id, a.credits, a.restored, a.debits_posted, a.debits_pending, fresh.status = 'pending' as live
  from quota_accounts a join fresh on a.id = fresh.account_id
  for no key update of a
), moved as (
  select id, live, coalesce($6::bigint, credits) as credits, restored, debits_posted + $3::bigint as posted,
    debits_pending - case when live then $4::bigint + $5::bigint else 0 end as pending
  from account
), granted as (
  select moved.*, case
      when not live or $9::bool then 0
      when credits + restored - posted - pending >= $7::bigint
        then $7::bigint + least($8::bigint, (credits + restored - posted - pending - $7::bigint) / 4)
      else greatest(credits + restored - posted - pending, 0)
    end as amount
  from moved
), booked as (
  update quota_accounts a
  set debits_posted = g.posted, debits_pending = g.pending + g.amount, credits = g.credits, updated_at = now()
  from granted g where a.id = g.id
), leased as (
  update quota_leases l
  set seq = $2::int, last_grant = g.amount,
      amount = case when g.live then l.amount - $4::bigint - $5::bigint + g.amount else l.amount end,
      status = case when g.live and $9::bool then 'closed' else l.status end,
      resolved_at = case when g.live and $9::bool then now() else l.resolved_at end
  from granted g where l.id = $1::uuid
), resolved as (
  insert into quota_holds (id, account_id, lease_id, amount, charged, status, request_id, instance_id, created_at, resolved_at)
  select r.id, g.id, $1::uuid, r.amount, r.charged, case when r.charged is null then 'voided' else 'posted' end,
    r.request_id, $10::uuid, r.created_at, now()
  from granted g
  cross join unnest($11::uuid[], $12::bigint[], $13::bigint[], $14::text[], $15::timestamptz[])
    as r(id, amount, charged, request_id, created_at)
  on conflict (id) do nothing
), touched as (
  insert into gateway_instances (id) select $10::uuid where $16::bool
  on conflict (id) do update set last_seen_at = now()
)${journal ? `, journal as (\n${journal(records)}\n)` : ""}
-- The CTEs read the rows as they were before this statement: a lease at seq - 1 means this call applied it.
select
  case when exists (select from fresh) then $2::int else lease.seq end as seq,
  lease.status,
  coalesce((select amount from granted), (select last_grant from lease))::text as granted,
  coalesce((select posted from granted), a.debits_posted)::text as posted,
  coalesce((select pending + amount from granted), a.debits_pending)::text as pending,
  coalesce((select credits from granted), a.credits)::text as credits,
  a.restored::text as restored,
  (select u.auto_reset_enabled from users u where u.id = a.user_id) as auto_reset
from lease join quota_accounts a on a.id = lease.account_id`;
}

export interface OpenLease {
  leaseId: string;
  userId: string;
  kind: string;
  period: string;
  /** The base credits of an account created here, or null (a balance not credited yet: 0). */
  base: bigint | null;
  instanceId: string;
}

/** Returns the account id. */
export async function openLease(pool: Pool, lease: OpenLease, timeoutMs?: number): Promise<string> {
  const query: TimedQuery = {
    name: "quota_open_lease",
    text: OPEN_LEASE,
    values: [lease.leaseId, lease.userId, lease.kind, lease.period, String(lease.base ?? 0n), lease.instanceId],
    query_timeout: timeoutMs,
  };
  const { rows } = await pool.query<{ account_id: string }>(query);
  return rows[0]!.account_id;
}

/** A request resolved since the last sync: posted with `charged`, or voided (null). */
export interface Resolution {
  holdId: string;
  requestId: string;
  amount: bigint;
  charged: bigint | null;
  reservedAt: Date;
  /** Its journal record (JSON text), committed with it; null for none. */
  record: string | null;
}

export interface SyncLease {
  leaseId: string;
  seq: number;
  instanceId: string;
  /** The base credits, or null to keep the account's own. */
  base: bigint | null;
  post: bigint;
  take: bigint;
  giveBack: bigint;
  need: bigint;
  headroom: bigint;
  close: boolean;
  /** Also renew this process's heartbeat. */
  touch: boolean;
  resolutions: Resolution[];
}

export interface SyncReply {
  /** False: the lease expired or closed meanwhile, and this sync only posted. */
  live: boolean;
  granted: bigint;
  /** The account after the sync. */
  posted: bigint;
  pending: bigint;
  credits: bigint;
  restored: bigint;
  /**
   * The user has automatic resets on (docs/billing.md, "Automatic resets"): a hint read with the sync, so that a
   * lease asks for a reset only where one may be used; the use checks it again under the account's lock.
   */
  autoReset: boolean;
}

export class LeaseSequenceError extends Error {
  constructor(leaseId: string, expected: number, found: number | null) {
    super(`lease ${leaseId} is at sync ${found ?? "(missing)"}, not ${expected - 1}`);
    this.name = "LeaseSequenceError";
  }
}

export type SyncLeaseFn = (pool: Pool, sync: SyncLease) => Promise<SyncReply>;

/**
 * The sync of leases whose resolutions carry journal records written by `journal` (none without one); a sync
 * whose answer takes longer than `timeoutMs` is abandoned (and retried: it is idempotent by its seq).
 */
export function leaseSync(journal?: Journal, timeoutMs?: number): SyncLeaseFn {
  const text = syncStatement(journal);
  const name = journal ? "quota_sync_lease_journal" : "quota_sync_lease";
  return async (pool, sync) => {
    const values: unknown[] = [
      sync.leaseId,
      sync.seq,
      String(sync.post),
      String(sync.take),
      String(sync.giveBack),
      sync.base === null ? null : String(sync.base),
      String(sync.need),
      String(sync.headroom),
      sync.close,
      sync.instanceId,
      sync.resolutions.map((r) => r.holdId),
      sync.resolutions.map((r) => String(r.amount)),
      sync.resolutions.map((r) => (r.charged === null ? null : String(r.charged))),
      sync.resolutions.map((r) => r.requestId),
      sync.resolutions.map((r) => r.reservedAt),
      sync.touch,
    ];
    if (journal) values.push(recordsOf(sync.resolutions));
    const query: TimedQuery = { name, text, values, query_timeout: timeoutMs };
    const { rows } = await pool.query<{
      seq: number;
      status: string;
      granted: string;
      posted: string;
      pending: string;
      credits: string;
      restored: string;
      auto_reset: boolean | null;
    }>(query);
    const row = rows[0];
    // At `seq` whether this call applied it or an earlier attempt did.
    if (!row || row.seq !== sync.seq) throw new LeaseSequenceError(sync.leaseId, sync.seq, row?.seq ?? null);
    return {
      live: row.status === "pending" || (row.status === "closed" && sync.close),
      granted: BigInt(row.granted),
      posted: BigInt(row.posted),
      pending: BigInt(row.pending),
      credits: BigInt(row.credits),
      restored: BigInt(row.restored),
      autoReset: row.auto_reset === true,
    };
  };
}

/** The resolutions' records as one JSON array text, without re-encoding them. */
function recordsOf(resolutions: readonly Resolution[]): string {
  let out = "";
  for (const r of resolutions) if (r.record !== null) out += out === "" ? r.record : `,${r.record}`;
  return `[${out}]`;
}

// The way out of a lease whose sync got a definitive answer (a data error, a sequence it cannot be at): the
// lease ends (expired, its units back to the account, as the expiry of a dead process's would) and its
// requests' charges post straight to the account. Exactly once by the hold's id: only the rows this statement
// inserts are booked, so a retry after a lost reply, or a resolution already written by a sync, books nothing
// again. The journal's rows are written with them (their request ids are their own key). Locks: the lease, then
// its account, as a sync.
function directStatement(journal: Journal | undefined): string {
  return `
with lease as (
  select id, account_id, status, amount from quota_leases where id = $1::uuid for update
), ended as (
  update quota_leases l set status = 'expired', resolved_at = now() from lease
  where l.id = lease.id and lease.status = 'pending'
  returning lease.amount
), resolved as (
  insert into quota_holds (id, account_id, lease_id, amount, charged, status, request_id, instance_id, created_at, resolved_at)
  select r.id, lease.account_id, lease.id, r.amount, r.charged, case when r.charged is null then 'voided' else 'posted' end,
    r.request_id, $7::uuid, r.created_at, now()
  from lease
  cross join unnest($2::uuid[], $3::bigint[], $4::bigint[], $5::text[], $6::timestamptz[]) as r(id, amount, charged, request_id, created_at)
  on conflict (id) do nothing
  returning charged
), account as (
  select a.id from quota_accounts a join lease on a.id = lease.account_id for no key update of a
), booked as (
  update quota_accounts a
  set debits_posted = a.debits_posted + coalesce((select sum(charged) from resolved), 0),
      debits_pending = a.debits_pending - coalesce((select amount from ended), 0),
      updated_at = now()
  from account where a.id = account.id
)${
    journal
      ? `, journal as (
${journal("$8::json")}
)`
      : ""
  }
select (select count(*) from resolved)::int as booked, exists (select from lease) as found`;
}

export type DirectPostFn = (
  pool: Pool,
  leaseId: string,
  instanceId: string,
  resolutions: readonly Resolution[],
  withRecords: boolean,
) => Promise<void>;

/** The direct posting of a lease's resolutions (and its end), with journal records written by `journal`. */
export function leaseDirectPost(journal?: Journal, timeoutMs?: number): DirectPostFn {
  const text = directStatement(journal);
  const name = journal ? "quota_direct_post_journal" : "quota_direct_post";
  return async (pool, leaseId, instanceId, resolutions, withRecords) => {
    const values: unknown[] = [
      leaseId,
      resolutions.map((r) => r.holdId),
      resolutions.map((r) => String(r.amount)),
      resolutions.map((r) => (r.charged === null ? null : String(r.charged))),
      resolutions.map((r) => r.requestId),
      resolutions.map((r) => r.reservedAt),
      instanceId,
    ];
    if (journal) values.push(withRecords ? recordsOf(resolutions) : "[]");
    const query: TimedQuery = { name, text, values, query_timeout: timeoutMs };
    const { rows } = await pool.query<{ booked: number; found: boolean }>(query);
    if (!rows[0]?.found) throw new Error(`lease ${leaseId} is not in the ledger`);
  };
}
