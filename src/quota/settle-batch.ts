import type { Pool } from "../db/pool.js";
import { createBatcher, MAX_BATCH } from "./batcher.js";
import { HoldResolvedError } from "./types.js";

// Settlements and releases of one process are applied in batches: with one busy user every resolution
// updates the same quota_accounts row, and each update holds that row's lock through its commit's WAL flush
// (docs/performance.md). A batch is one statement that touches each of its accounts once.

// `charged` is null for a release. Per hold the rules of a single settle/release hold:
// - DISTINCT ON keeps the first request for a hold; a later one in the same batch is not returned, so its
//   caller gets HoldResolvedError like a second call would, and it has no effect.
// - An expired hold's pending amount was already returned by the expiry, so only a pending one gives it back,
//   and only a settle (never a release) resolves an expired hold.
// - FOR UPDATE waits for a concurrent settle/release/expiry of a hold and re-checks the status it committed,
//   so `prior.status` is never stale (UPDATE ... RETURNING would show the new one).
// Holds, then accounts, are locked in id order, and all holds before any account (the aggregate reads every
// row of `hold` first): batches of two processes with overlapping holds or accounts cannot deadlock, nor can
// they with the expiry, which skips locked holds and locks accounts in id order too.
const RESOLVE_BATCH = `
with req as (
  select distinct on (id) id, charged, ord
  from unnest($1::uuid[], $2::bigint[]) with ordinality as r(id, charged, ord)
  order by id, ord
), prior as (
  select h.id, h.account_id, h.amount, h.status, req.charged, req.ord
  from req join quota_holds h on h.id = req.id
  where h.status = 'pending' or (h.status = 'expired' and req.charged is not null)
  order by h.id
  for update of h
), hold as (
  update quota_holds h
  set status = case when prior.charged is null then 'voided' else 'posted' end,
      charged = prior.charged,
      resolved_at = now()
  from prior where h.id = prior.id
  returning prior.ord, prior.account_id, prior.amount, prior.status, prior.charged
), locked as (
  select a.id, t.pending, t.posted from quota_accounts a
  join (
    select account_id,
      coalesce(sum(amount) filter (where status = 'pending'), 0)::bigint as pending,
      coalesce(sum(charged), 0)::bigint as posted
    from hold group by account_id
  ) t on t.account_id = a.id
  order by a.id
  for no key update of a
), account as (
  update quota_accounts a
  set debits_posted = a.debits_posted + locked.posted,
      debits_pending = a.debits_pending - locked.pending,
      updated_at = now()
  from locked where a.id = locked.id
)
select ord from hold`;

/** Holds per statement: bounds the statement's parameters and how long it keeps rows locked. */
interface Resolution {
  holdId: string;
  /** null: release. */
  charged: bigint | null;
}

/** Posts (`charged`) or voids (null) a hold; resolves or rejects per call, exactly like a statement of its own. */
export type ResolveHold = (holdId: string, charged: bigint | null) => Promise<void>;

export function createHoldResolver(pool: Pool, maxBatch = MAX_BATCH): ResolveHold {
  const resolve = createBatcher<Resolution, void>(
    async (batch) => {
      const { rows } = await pool.query<{ ord: string }>({
        name: "quota_resolve_batch",
        text: RESOLVE_BATCH,
        values: [batch.map((r) => r.holdId), batch.map((r) => (r.charged === null ? null : String(r.charged)))],
      });
      const applied = new Set(rows.map((row) => Number(row.ord)));
      return batch.map((r, i) => (applied.has(i + 1) ? undefined : new HoldResolvedError(r.holdId)));
    },
    { maxBatch },
  );
  return (holdId, charged) => resolve({ holdId, charged });
}
