import type { Pool } from "../db/pool.js";
import type { AccountKind } from "./account-kinds.js";

// The ledger's reconciliation (docs/billing.md, "Retention"): what every account's balance columns must equal,
// recomputed from the rows that made them. Every statement that moves an account writes its rows in the same
// statement, so this holds at every commit, and one statement reads one snapshot of it: it needs no lock and
// can run beside serving processes.
//
//   debits_posted  = Σ charged of its posted holds (lease-settled requests and durable holds)
//                    + charged of its quota_hold_rollups row (the holds the retention deleted)
//                    − Σ posted of its pending leases (posted by syncs that only post, not folded yet)
//   debits_pending = Σ amount + Σ posted + Σ returned of its pending leases + Σ amount of its pending durable holds
// Reported with the leases' unfolded posts moved to the posted side and what they gave back to the free side, as
// every reader of the account sees it (the view quota_account_balances).
//   restored       = Σ amount of its quota_restorations
//   credits        = Σ amount of its user's reseller_credits (reseller balances only: the daily allowance's
//                    credits are the plan's, stated by the caller)
//                  = Σ count of its quota_reset_grants (gifted resets)
const RECONCILE = `
with posted as (
  select account_id, sum(charged) as n from quota_holds where status = 'posted' group by account_id
), durable as (
  select account_id, sum(amount) as n from quota_holds where status = 'pending' and lease_id is null group by account_id
), leased as (
  select account_id, sum(amount) as n, sum(posted) as unfolded, sum(returned) as returned
  from quota_leases where status = 'pending' group by account_id
), restorations as (
  select account_id, sum(amount) as n from quota_restorations group by account_id
), credited as (
  select user_id, sum(amount) as n from reseller_credits group by user_id
), granted as (
  select account_id, sum(count) as n from quota_reset_grants group by account_id
), expected as (
  select a.id, a.kind, a.period, a.debits_posted + coalesce(leased.unfolded, 0) as debits_posted,
    a.debits_pending - coalesce(leased.unfolded, 0) - coalesce(leased.returned, 0) as debits_pending, a.restored, a.credits,
    coalesce(posted.n, 0) + coalesce(r.charged, 0) as rows_posted,
    coalesce(leased.n, 0) + coalesce(durable.n, 0) as rows_pending,
    coalesce(restorations.n, 0) as rows_restored,
    case when a.kind = $1::text then coalesce(credited.n, 0) when a.kind = $2::text then coalesce(granted.n, 0) end as rows_credited
  from quota_accounts a
  left join posted on posted.account_id = a.id
  left join quota_hold_rollups r on r.account_id = a.id
  left join durable on durable.account_id = a.id
  left join leased on leased.account_id = a.id
  left join restorations on restorations.account_id = a.id
  left join credited on credited.user_id = a.user_id and a.kind = $1::text
  left join granted on granted.account_id = a.id
)
select id::text, kind, period,
  debits_posted::text, rows_posted::text, debits_pending::text, rows_pending::text,
  restored::text, rows_restored::text, credits::text, rows_credited::text
from expected
where debits_posted <> rows_posted or debits_pending <> rows_pending or restored <> rows_restored
  or (rows_credited is not null and credits <> rows_credited)
order by id`;

/** One side: the account's column and what its rows add up to. */
export interface Reconciled {
  account: bigint;
  rows: bigint;
}

/** An account whose balance columns differ from its rows. */
export interface LedgerMismatch {
  accountId: string;
  kind: string;
  period: string;
  posted: Reconciled;
  pending: Reconciled;
  restored: Reconciled;
  /** Reseller balances and gifted resets only; null for kinds whose credits the caller states. */
  credits: Reconciled | null;
}

interface Row {
  id: string;
  kind: string;
  period: string;
  debits_posted: string;
  rows_posted: string;
  debits_pending: string;
  rows_pending: string;
  restored: string;
  rows_restored: string;
  credits: string;
  rows_credited: string | null;
}

/** The kind whose credits are the sum of reseller_credits (reseller.ts writes both in one statement). */
const CREDITED_KIND: AccountKind = "reseller_usd";
/** The kind whose credits are the sum of its grants (resets-sql.ts writes both in one statement). */
const GRANTED_KIND: AccountKind = "gifted_resets";

/** Every account that does not reconcile; empty when the ledger is consistent. */
export async function reconcileLedger(pool: Pool): Promise<LedgerMismatch[]> {
  const { rows } = await pool.query<Row>({ name: "quota_reconcile", text: RECONCILE, values: [CREDITED_KIND, GRANTED_KIND] });
  return rows.map((r) => ({
    accountId: r.id,
    kind: r.kind,
    period: r.period,
    posted: { account: BigInt(r.debits_posted), rows: BigInt(r.rows_posted) },
    pending: { account: BigInt(r.debits_pending), rows: BigInt(r.rows_pending) },
    restored: { account: BigInt(r.restored), rows: BigInt(r.rows_restored) },
    credits: r.rows_credited === null ? null : { account: BigInt(r.credits), rows: BigInt(r.rows_credited) },
  }));
}
