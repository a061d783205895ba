import type pg from "pg";
import type { Pool } from "../db/pool.js";
import type { AccountKey } from "./account-sql.js";
import type { DurableStatus } from "./types.js";

// Durable holds (docs/billing.md, "Durable holds"): a row of quota_holds without a lease, pending until it is
// posted, voided or expired, counted in its account's pending debits from the moment it is taken, so every
// lease's next sync sees it. Each operation is one statement guarded by row locks: the hold, then its account
// (the lease sync locks its lease, then the account; the expiry skips locked holds and locks accounts in id
// order), and each is idempotent by the hold's id.

// Admitted only if the account's remaining covers the amount (with the caller's base credits unless the account holds
// a newer revision of them); `on conflict (id) do nothing` makes a second
// reservation of the same id no second hold (it sees a hold committed concurrently, which a read would not).
const RESERVE = `
with locked as (
  select id, credits, credits_revision, restored, debits_posted, debits_pending from quota_accounts
  where user_id = $2::uuid and kind = $3::text and period = $4::text
  for no key update
), account as (
  select id, restored, debits_posted, debits_pending,
    case when $5::bigint is not null and $9::bigint >= credits_revision then $5::bigint else credits end as credits,
    case when $5::bigint is not null and $9::bigint >= credits_revision then $9::bigint else credits_revision end as credits_revision
  from locked
), admitted as (
  select id from account where credits + restored - debits_posted - debits_pending >= $6::bigint
), inserted as (
  insert into quota_holds (id, account_id, amount, status, request_id, expires_at)
  select $1::uuid, id, $6::bigint, 'pending', $7::text, $8::timestamptz from admitted
  on conflict (id) do nothing
  returning account_id, amount
), booked as (
  update quota_accounts a set debits_pending = a.debits_pending + i.amount, credits = account.credits,
    credits_revision = account.credits_revision, updated_at = now()
  from inserted i join account on account.id = i.account_id where a.id = i.account_id
)
select account.id::text as account_id, exists (select from inserted) as inserted,
  (account.credits + account.restored)::text as allowance, account.debits_posted::text as posted, account.debits_pending::text as pending
from account`;

// Posts (charged not null) or voids (null) a hold still pending, or posts one that expired meanwhile (its
// units went back at the expiry, so only the charge is booked). A hold already resolved is returned as it is.
const RESOLVE = `
with hold as (
  select id, account_id, amount, status, charged, request_id, expires_at from quota_holds
  where id = $1::uuid and lease_id is null
  for update
), due as (
  select hold.*, case when $2::bigint is null then 'voided' else 'posted' end as next from hold
  where hold.status = 'pending' or (hold.status = 'expired' and $2::bigint is not null)
), account as (
  select a.id from quota_accounts a join due on a.id = due.account_id for no key update of a
), changed as (
  update quota_holds h set status = due.next, charged = $2::bigint, resolved_at = now() from due where h.id = due.id
), booked as (
  update quota_accounts a
  set debits_posted = a.debits_posted + coalesce($2::bigint, 0),
      debits_pending = a.debits_pending - case when due.status = 'pending' then due.amount else 0 end,
      updated_at = now()
  from due join account on account.id = due.account_id where a.id = account.id
)
select hold.account_id::text, hold.amount::text, hold.status as before, coalesce((select next from due), hold.status) as status,
  coalesce(case when exists (select from due) then $2::bigint end, hold.charged)::text as charged, hold.request_id as reference, hold.expires_at
from hold`;

const READ_HOLD = `
select account_id::text, amount::text, status, status as before, charged::text, request_id as reference, expires_at
from quota_holds where id = $1::uuid and lease_id is null`;

export interface DurableReserve extends AccountKey {
  id: string;
  base: bigint | null;
  /** The revision of `base` (account-kinds.ts, baseRevision): stated over an older one only. */
  baseRevision: bigint;
  amount: bigint;
  reference: string;
  expiresAt: Date;
}

export type ReserveRow =
  { account: "missing" } | { account: "found"; accountId: string; inserted: boolean; allowance: bigint; posted: bigint; pending: bigint };

/** On a transaction's client, it commits with the transaction (ledgerInTransaction, in-transaction.ts: a token transfer's send). */
export async function reserveDurableRow(pool: Pool | pg.PoolClient, r: DurableReserve): Promise<ReserveRow> {
  const { rows } = await pool.query<{ account_id: string; inserted: boolean; allowance: string; posted: string; pending: string }>({
    name: "quota_durable_reserve",
    text: RESERVE,
    values: [
      r.id,
      r.userId,
      r.kind,
      r.period,
      r.base === null ? null : String(r.base),
      String(r.amount),
      r.reference,
      r.expiresAt,
      String(r.baseRevision),
    ],
  });
  const row = rows[0];
  if (!row) return { account: "missing" };
  return {
    account: "found",
    accountId: row.account_id,
    inserted: row.inserted,
    allowance: BigInt(row.allowance),
    posted: BigInt(row.posted),
    pending: BigInt(row.pending),
  };
}

export interface DurableRow {
  accountId: string;
  amount: bigint;
  /** The status before this statement (equal to `status` when it changed nothing). */
  before: DurableStatus;
  status: DurableStatus;
  charged: bigint | null;
  reference: string;
  expiresAt: Date;
}

interface RawRow {
  account_id: string;
  amount: string;
  before: DurableStatus;
  status: DurableStatus;
  charged: string | null;
  reference: string;
  expires_at: Date;
}

const toRow = (row: RawRow | undefined): DurableRow | undefined =>
  row && {
    accountId: row.account_id,
    amount: BigInt(row.amount),
    before: row.before,
    status: row.status,
    charged: row.charged === null ? null : BigInt(row.charged),
    reference: row.reference,
    expiresAt: row.expires_at,
  };

/** Posts `charged` or voids (null); undefined when there is no such durable hold. */
export async function resolveDurableRow(pool: Pool | pg.PoolClient, id: string, charged: bigint | null): Promise<DurableRow | undefined> {
  const { rows } = await pool.query<RawRow>({
    name: "quota_durable_resolve",
    text: RESOLVE,
    values: [id, charged === null ? null : String(charged)],
  });
  return toRow(rows[0]);
}

export async function readDurableRow(pool: Pool, id: string): Promise<DurableRow | undefined> {
  const { rows } = await pool.query<RawRow>({ name: "quota_durable_read", text: READ_HOLD, values: [id] });
  return toRow(rows[0]);
}
