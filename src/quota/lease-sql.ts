import { AUTO_RESET_THRESHOLD } from "./auto-reset.js";
import type { Queryable, TimedQuery } from "../db/pool.js";

// The syncs of the escrow's leases (escrow.ts, docs/billing.md "Escrow"; a lease is opened by lease-open-sql.ts).
// Each is atomic across gateway processes by itself: the account row lock decides every race, so no explicit
// transaction is needed.

/**
 * The journal: the statements that commit each resolved request's record (its request-log row) in the same statement
 * as its charge, reading the records from the JSON array `param`, and rewrite the records of charges refunded
 * afterwards (refund-sql.ts). Supplied by the composition root, so that the ledger names no table of another feature.
 */
export interface Journal {
  insert(param: string): string;
  rewrite(param: string): string;
}

/**
 * A sync's resolutions as `quota_holds` rows on the account of the CTE `account` (its `id`), for the lease $1:
 * posted with their charge, or voided. The instance is parameter $`instance`; the five resolution arrays (ids,
 * amounts, charges, request ids, reservation times) start at parameter $`arrays`. Exactly once by the hold's id.
 */
const insertResolutions = (account: string, instance: number, arrays: number) => `
  insert into quota_holds (id, account_id, lease_id, amount, charged, status, request_id, instance_id, created_at, resolved_at)
  select r.id, a.id, $1::uuid, r.amount, r.charged, case when r.charged is null then 'voided' else 'posted' end,
    r.request_id, $${instance}::uuid, r.created_at, now()
  from ${account} a
  cross join unnest($${arrays}::uuid[], $${arrays + 1}::bigint[], $${arrays + 2}::bigint[], $${arrays + 3}::text[], $${arrays + 4}::timestamptz[])
    as r(id, amount, charged, request_id, created_at)
  on conflict (id) do nothing`;

// One sync of a lease: posts settled charges (`post`, of which `take` came out of the lease), writes the
// resolved requests' rows (and their journal records), gives back `give_back` unused units, then grants `need`
// plus up to `headroom` more if the account has them (at most a quarter of what is left after `need`, so that
// other processes still find some), or whatever is left when that is less than `need`. `close` gives
// everything back and ends the lease. What is left is `credits + restored - posted - pending`. For a user with
// automatic resets on, the headroom never takes what is left under the reset's threshold (auto-reset.ts): a reset
// is used when fewer units remain, and other processes' leases count as reserved there, so units leased ahead of
// demand would spend a reset the user did not need (two gateways racing at the threshold, with leases asking for
// seconds of demand ahead, used two). Only `need` goes below it.
//
// It also folds what syncs that only posted left on the lease (its `posted`, units already counted in the account's
// pending debits) into the account's posted debits: after a full sync the lease holds no posted units. And it
// gathers what this lease and the account's other leases gave back by syncs that only post (their `returned`) into
// what the account has free, before it grants: the units a process short of them asked the others for.
//
// The base ($6) is the caller's view of the base credits (the plan's allowance) with its revision ($17): it
// replaces the account's credits only when its revision is newer than the one the account holds, so a process
// with an older view of a plan (a rolling config change, a key cache that missed a plan change) never undoes a
// newer one. Null keeps the credits the account has (a reseller balance, credited by the operator). Restorations
// are never touched here.
//
// Applied only if `seq` is the lease's next number: a retry after a lost reply finds its own number and gets
// the stored grant back instead of a second effect (the journal's rows are written only when applied, and
// are idempotent by their own key besides). A lease that is no longer pending (expired: its process was
// presumed dead, and the expiry already returned its units) still posts charges, and takes, gives and grants
// nothing. A lease of a fenced process (or one whose row is gone) takes and gives back, but is granted nothing.
//
// Fencing (instances.ts): `touch` renews this process's heartbeat, only if the process was not fenced; otherwise
// the process's row is read. Either way a fenced process is told so and gets no grant. Locks: the lease, then its
// account, then (when touching) the process's row; the fence takes only that row and the expiry skips locked
// leases, so none of them can deadlock. Every figure of the reply is read from the locked rows.
function syncStatement(journal: Journal | undefined): string {
  const records = "(case when exists (select from fresh) then $18::json else '[]'::json end)";
  return `
with lease as (
  select id, account_id, status, seq, last_grant, posted, returned from quota_leases where id = $1::uuid for update
), fresh as (
  select * from lease where seq = $2::int - 1
), gathered as (
  -- What the account's other leases gave back (returned): skipped while another statement holds one, so that this
  -- statement never waits for a lease after taking the account.
  update quota_leases o set returned = 0
  from (
    select id, returned from quota_leases
    where account_id = (select account_id from fresh) and id <> $1::uuid and returned > 0
    for update skip locked
  ) r
  where o.id = r.id
  returning r.returned
), account as (
  select a.id, a.credits, a.credits_revision, a.restored, a.debits_posted, a.debits_pending, fresh.status = 'pending' as open,
    fresh.posted as folding, fresh.returned + (select coalesce(sum(returned), 0)::bigint from gathered) as gathering,
    (select u.auto_reset_enabled from users u where u.id = a.user_id) as auto_reset
  from quota_accounts a join fresh on a.id = fresh.account_id
  for no key update of a
), touched as (
  update gateway_instances set last_seen_at = now()
  where id = $10::uuid and fenced_at is null and $16::bool and exists (select from account)
  returning id
), alive as (
  -- Renewed now, or (not asked to renew, or a retry of a sync applied before, which touches nothing) not fenced.
  select exists (select from touched)
    or ((not $16::bool or not exists (select from account))
      and exists (select from gateway_instances where id = $10::uuid and fenced_at is null)) as ok
), moved as (
  select id, open, open and (select ok from alive) as live,
    case when $6::bigint is not null and $17::bigint >= credits_revision then $6::bigint else credits end as credits,
    case when $6::bigint is not null and $17::bigint >= credits_revision then $17::bigint else credits_revision end as credits_revision,
    restored, debits_posted + $3::bigint + folding as posted, folding,
    debits_pending - folding - gathering - case when open then $4::bigint + $5::bigint else 0 end as pending,
    case when auto_reset then ${AUTO_RESET_THRESHOLD} else 0 end as floor
  from account
), granted as (
  select moved.*, case
      when not live or $9::bool then 0
      when credits + restored - posted - pending >= $7::bigint
        then $7::bigint + least($8::bigint, greatest(credits + restored - posted - pending - $7::bigint - floor, 0) / 4)
      else greatest(credits + restored - posted - pending, 0)
    end as amount
  from moved
), booked as (
  update quota_accounts a
  set debits_posted = g.posted, debits_pending = g.pending + g.amount, credits = g.credits,
      credits_revision = g.credits_revision, updated_at = now()
  from granted g where a.id = g.id
), leased as (
  update quota_leases l
  set seq = $2::int, last_grant = g.amount, posted = 0, returned = 0,
      amount = case when g.open then l.amount - $4::bigint - $5::bigint + g.amount else l.amount end,
      status = case when g.open and $9::bool then 'closed' else l.status end,
      resolved_at = case when g.open and $9::bool then now() else l.resolved_at end
  from granted g where l.id = $1::uuid
), resolved as (${insertResolutions("granted", 10, 11)}
)${journal ? `, journal as (\n${journal.insert(records)}\n)` : ""}
-- The CTEs read the rows as they were before this statement: a lease at seq - 1 means this call applied it.
select
  case when exists (select from fresh) then $2::int else lease.seq end as seq,
  lease.status,
  (select ok from alive) as alive,
  coalesce((select amount from granted), (select last_grant from lease))::text as granted,
  -- Who could give back (give-back.ts): counted only when this sync fell short of what it needed.
  case when coalesce((select amount from granted), (select last_grant from lease)) < $7::bigint then (
    select count(distinct l.instance_id)::int from quota_leases l join gateway_instances i on i.id = l.instance_id
    where l.account_id = lease.account_id and l.status = 'pending' and l.instance_id <> $10::uuid and i.fenced_at is null
  ) else 0 end as others,
  coalesce((select posted from granted), a.debits_posted)::text as posted,
  coalesce((select pending + amount from granted), a.debits_pending)::text as pending,
  coalesce((select credits from granted), a.credits)::text as credits,
  coalesce((select restored from granted), a.restored)::text as restored,
  (select u.auto_reset_enabled from users u where u.id = a.user_id) as auto_reset
from lease join quota_accounts a on a.id = lease.account_id`;
}

// A sync that only posts and gives back (postOnly, the common one under load: settlements and nothing else; and
// the answer to another process's ask, give-back.ts), with no grant, heartbeat, fence check or base to apply. A
// charge taken out of an open lease's units moves them from the lease's `amount` to its `posted`, and units given
// back move to its `returned`: all are counted in the account's pending debits already, so what the account has
// free does not change until a full sync gathers what was returned, and nobody else's decision depends on it. The account row is therefore left
// alone (docs/billing.md, "Escrow": with many processes on one account, its row's queue was every answer's wait);
// the lease's next full sync, expiry or direct post folds `posted` into the account's posted debits (and `returned`
// into what it has free; any other lease's full sync on the account gathers `returned` too). The account
// is written only for what changes its free units: a charge beyond what the lease covered (an overshoot), or any
// charge of a lease no longer pending (its units went back already). Applied once by `seq` (a retry after a lost
// reply matches no row and reads the figures as they are). Locks: the lease, then (rarely) its account, as the
// full statement. It tells no fence: a fenced process's lease has expired (not live), and its next sync that
// renews the heartbeat hears the rest.
function postOnlyStatement(journal: Journal | undefined): string {
  return `
with lease as (
  update quota_leases l set seq = $2::int,
    amount = case when l.status = 'pending' then l.amount - $4::bigint - $5::bigint else l.amount end,
    posted = case when l.status = 'pending' then l.posted + $4::bigint else l.posted end,
    returned = case when l.status = 'pending' then l.returned + $5::bigint else l.returned end
  where l.id = $1::uuid and l.seq = $2::int - 1
  returning l.account_id, l.status = 'pending' as open
), booked as (
  update quota_accounts a
  set debits_posted = a.debits_posted + $3::bigint - case when lease.open then $4::bigint else 0 end, updated_at = now()
  from lease where a.id = lease.account_id and $3::bigint > case when lease.open then $4::bigint else 0 end
  returning a.id, a.credits, a.restored, a.debits_posted, a.debits_pending
), resolved as (${insertResolutions("(select account_id as id from lease)", 6, 7)}
)${journal ? `, journal as (\n${journal.insert("(case when exists (select from lease) then $12::json else '[]'::json end)")}\n)` : ""}
-- The main query reads the rows as they were before this statement (the booked figures when this call wrote the
-- account): what the account has free is the same either way.
-- Not applied, the seq is read locked (so at its newest): a retry whose first send committed after this
-- statement's snapshot (it still ran when its connection was cut) waited for it and must see its seq.
select
  case when exists (select from lease) then $2::int else (select seq from quota_leases where id = $1::uuid for share) end as seq,
  l.status,
  coalesce(b.debits_posted, a.debits_posted)::text as posted,
  coalesce(b.debits_pending, a.debits_pending)::text as pending,
  coalesce(b.credits, a.credits)::text as credits,
  coalesce(b.restored, a.restored)::text as restored,
  (select u.auto_reset_enabled from users u where u.id = a.user_id) as auto_reset
from quota_leases l join quota_accounts a on a.id = l.account_id left join booked b on true
where l.id = $1::uuid`;
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
  /** The revision of `base` (account-kinds.ts, baseRevision): it applies only over an older one. */
  baseRevision: bigint;
  post: bigint;
  take: bigint;
  giveBack: bigint;
  need: bigint;
  headroom: bigint;
  close: boolean;
  /** Also renew this process's heartbeat. */
  touch: boolean;
  resolutions: Resolution[];
  /**
   * Nothing but posting, and giving back what another process asked for (no waiter, need and headroom 0, not
   * closing, not touching, the base as last applied): the cheaper statement (postOnlyStatement), which leaves the
   * account row alone.
   */
  postOnly?: boolean;
}

export interface SyncReply {
  /** False: the lease expired or closed meanwhile (or its process was fenced), and this sync only posted. */
  live: boolean;
  /** This process was fenced (presumed dead, its leases expired): it must drop every lease before admitting again. */
  fenced: boolean;
  granted: bigint;
  /**
   * The account row after the sync. What it has free (`credits + restored - posted - pending`) is exact; the units
   * that open leases posted and have not folded yet count as pending here (a refusal states their sum only).
   */
  posted: bigint;
  pending: bigint;
  credits: bigint;
  restored: bigint;
  /**
   * The user has automatic resets on (docs/billing.md, "Automatic resets"): a hint read with the sync, so that a
   * lease asks for a reset only where one may be used; the use checks it again under the account's lock.
   */
  autoReset: boolean;
  /**
   * How many other live processes hold an open lease on the account, counted only when the sync granted less than
   * it needed (else 0): the processes that could give back (give-back.ts).
   */
  others: number;
}

export class LeaseSequenceError extends Error {
  constructor(leaseId: string, expected: number, found: number | null) {
    super(`lease ${leaseId} is at sync ${found ?? "(missing)"}, not ${expected - 1}`);
    this.name = "LeaseSequenceError";
  }
}

/** A sync on the pool (a statement of its own) or on a transaction's client (an automatic reset first). */
export type SyncLeaseFn = (db: Queryable, sync: SyncLease) => Promise<SyncReply>;

/**
 * The sync of leases whose resolutions carry journal records written by `journal` (none without one); a sync
 * whose answer takes longer than `timeoutMs` is abandoned (and retried: it is idempotent by its seq).
 */
export function leaseSync(journal?: Journal, timeoutMs?: number): SyncLeaseFn {
  const full = fullSync(journal, timeoutMs);
  const post = postOnlySync(journal, timeoutMs);
  return (pool, sync) => (sync.postOnly ? post(pool, sync) : full(pool, sync));
}

/** The full statement of a sync (syncStatement). */
function fullSync(journal: Journal | undefined, timeoutMs: number | undefined): SyncLeaseFn {
  const text = syncStatement(journal);
  const name = journal ? "quota_sync_lease_journal" : "quota_sync_lease";
  return async (pool, sync) => {
    const values: unknown[] = [
      ...postingValues(sync),
      sync.base === null ? null : String(sync.base),
      String(sync.need),
      String(sync.headroom),
      sync.close,
      sync.instanceId,
      ...resolutionArrays(sync),
      sync.touch,
      String(sync.baseRevision),
    ];
    if (journal) values.push(recordsOf(sync.resolutions));
    const query: TimedQuery = { name, text, values, query_timeout: timeoutMs };
    const { rows } = await pool.query<{
      seq: number;
      status: string;
      alive: boolean;
      granted: string;
      posted: string;
      pending: string;
      credits: string;
      restored: string;
      auto_reset: boolean | null;
      others: number;
    }>(query);
    const row = rows[0];
    // At `seq` whether this call applied it or an earlier attempt did.
    if (!row || row.seq !== sync.seq) throw new LeaseSequenceError(sync.leaseId, sync.seq, row?.seq ?? null);
    return {
      live: row.alive && (row.status === "pending" || (row.status === "closed" && sync.close)),
      fenced: !row.alive,
      granted: BigInt(row.granted),
      posted: BigInt(row.posted),
      pending: BigInt(row.pending),
      credits: BigInt(row.credits),
      restored: BigInt(row.restored),
      autoReset: row.auto_reset === true,
      others: row.others,
    };
  };
}

/** The statement of a sync that only posts (postOnlyStatement). */
function postOnlySync(journal: Journal | undefined, timeoutMs: number | undefined): SyncLeaseFn {
  const postOnly = { text: postOnlyStatement(journal), name: journal ? "quota_post_lease_journal" : "quota_post_lease" };
  return async (pool, sync) => {
    const values: unknown[] = [...postingValues(sync), sync.instanceId, ...resolutionArrays(sync)];
    if (journal) values.push(recordsOf(sync.resolutions));
    const query: TimedQuery = { name: postOnly.name, text: postOnly.text, values, query_timeout: timeoutMs };
    const { rows } = await pool.query<{
      seq: number;
      status: string;
      posted: string;
      pending: string;
      credits: string;
      restored: string;
      auto_reset: boolean | null;
    }>(query);
    const row = rows[0];
    if (!row || row.seq !== sync.seq) throw new LeaseSequenceError(sync.leaseId, sync.seq, row?.seq ?? null);
    return {
      live: row.status === "pending",
      fenced: false,
      granted: 0n,
      posted: BigInt(row.posted),
      pending: BigInt(row.pending),
      credits: BigInt(row.credits),
      restored: BigInt(row.restored),
      autoReset: row.auto_reset === true,
      others: 0,
    };
  };
}

/** The first parameters of both statements ($1-$5): the lease, its seq, and what the sync posts, takes and gives back. */
function postingValues(sync: SyncLease) {
  return [sync.leaseId, sync.seq, String(sync.post), String(sync.take), String(sync.giveBack)];
}

/** A sync's resolutions as the five arrays its statements unnest (insertResolutions). */
function resolutionArrays(sync: SyncLease) {
  return [
    sync.resolutions.map((r) => r.holdId),
    sync.resolutions.map((r) => String(r.amount)),
    sync.resolutions.map((r) => (r.charged === null ? null : String(r.charged))),
    sync.resolutions.map((r) => r.requestId),
    sync.resolutions.map((r) => r.reservedAt),
  ];
}

/** The resolutions' records as one JSON array text, without re-encoding them. */
export function recordsOf(resolutions: readonly Resolution[]): string {
  let out = "";
  for (const r of resolutions) if (r.record !== null) out += out === "" ? r.record : `,${r.record}`;
  return `[${out}]`;
}
