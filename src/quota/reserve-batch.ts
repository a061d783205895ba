import { randomUUID } from "node:crypto";
import type { Pool } from "../db/pool.js";
import { createBatcher, MAX_BATCH } from "./batcher.js";
import { utcDay } from "./day.js";
import type { AccountKind, ReserveInput } from "./types.js";

// Reservations of one process are applied in batches per account (user + day): with one busy user every hold
// updates the same quota_accounts row, and each update holds that row's lock through its commit's WAL flush
// (docs/performance.md). A batch is one statement that touches the account row at most once; a lone call is
// a batch of one, so it still costs one statement.

// Admission is the strict arrival-order prefix of the batch's positive amounts whose cumulative amount fits:
// such a call i is held iff every positive call up to i is, and amount_1 + ... + amount_i <= allowance_i -
// posted - pending, which is what the calls would get one statement each, in that order, up to the first
// refusal. After a refusal the later calls are refused too, even a smaller one that would still fit: arrival
// order is the fairness rule, and a refused caller is not overtaken. A 0-unit hold (free models) is held, as a
// single call is, iff the remaining after the holds admitted before it is >= 0: a refused big request does not
// refuse a free one, but an overshoot refuses every request until the reset (DESIGN.md §5). The account takes
// the allowance of the last held call (a plan change applies at once); an account without any hold is left
// alone, as a refused single call left it.
//
// FOR NO KEY UPDATE waits for a concurrent writer of the account (another process) and returns the row it
// committed, so the prefix is computed from the latest balance; the UPDATE then re-reads that same locked row.
// An account missing from the statement's snapshot is inserted with the prefix computed against zero; if
// another process inserted it meanwhile, nothing is written and `raced` asks for a re-run, which sees the row.
// The account is locked before any hold is written and holds are never locked here, so this cannot deadlock
// with settlement or expiry (both lock holds first, then accounts).
const RESERVE_BATCH = `
with req as (
  select *
  from unnest($4::uuid[], $5::bigint[], $6::bigint[], $7::text[], $8::uuid[], $9::timestamptz[])
    with ordinality as r(hold_id, amount, allowance, request_id, instance_id, created_at, ord)
), locked as (
  select id, debits_posted, debits_pending from quota_accounts
  where user_id = $1::uuid and kind = $2::text and period = $3::text
  for no key update
), fits as (
  select r.*, sum(r.amount) over w <= r.allowance - coalesce(l.debits_posted + l.debits_pending, 0) as fits
  from req r left join locked l on true
  window w as (order by r.ord rows unbounded preceding)
), prefix as (
  select *, coalesce(bool_and(fits) filter (where amount > 0) over w, true) as prefix_fits
  from fits window w as (order by ord rows unbounded preceding)
), admitted as (
  select * from (
    select p.*, case when p.amount > 0 then p.prefix_fits
      else coalesce(sum(p.amount) filter (where p.prefix_fits) over w, 0)
        <= p.allowance - coalesce(l.debits_posted + l.debits_pending, 0) end as ok
    from prefix p left join locked l on true
    window w as (order by p.ord rows unbounded preceding)
  ) a
  where ok
), total as (
  select count(*) as n, coalesce(sum(amount), 0)::bigint as amount,
    (array_agg(allowance order by ord desc))[1] as credits, (array_agg(created_at order by ord desc))[1] as at
  from admitted
), updated as (
  update quota_accounts a
  set debits_pending = a.debits_pending + total.amount, credits = total.credits, updated_at = total.at
  from locked, total
  where a.id = locked.id and total.n > 0
  returning a.id
), inserted as (
  insert into quota_accounts (user_id, kind, period, credits, debits_pending, updated_at)
  select $1::uuid, $2::text, $3::text, total.credits, total.amount, total.at from total
  where total.n > 0 and not exists (select from locked)
  on conflict (user_id, kind, period) do nothing
  returning id
), account as (
  select id from updated union all select id from inserted
), held as (
  insert into quota_holds (id, account_id, amount, request_id, instance_id, created_at)
  select admitted.hold_id, account.id, admitted.amount, admitted.request_id, admitted.instance_id, admitted.created_at
  from admitted cross join account
  returning id
)
select
  (select id from account) as account_id,
  array(select id from held)::text[] as held,
  coalesce((select debits_posted from locked), 0)::text as used,
  (coalesce((select debits_pending from locked), 0) + (select amount from total))::text as reserved,
  (select n from total) > 0 and not exists (select from account) as raced`;

/** Calls per statement: bounds the statement's parameters and how long it keeps the account locked. */
export type ReserveOutcome =
  | { ok: true; holdId: string; accountId: string }
  | { ok: false; used: bigint; reserved: bigint };

interface Call {
  input: ReserveInput;
  now: Date;
}

interface Row {
  account_id: string | null;
  held: string[];
  used: string;
  reserved: string;
  raced: boolean;
}

/** Holds `input.amount` on today's account if it fits, exactly like a statement of its own per call. */
export type ReserveHold = (input: ReserveInput, now: Date) => Promise<ReserveOutcome>;

export function createReserver(pool: Pool, kind: AccountKind, maxBatch = MAX_BATCH): ReserveHold {
  async function run(batch: Call[]): Promise<ReserveOutcome[]> {
    const first = batch[0]!;
    const holdIds = batch.map(() => randomUUID());
    // Bounded: a race is lost only to the statement that created the account, which has committed by then.
    for (let attempt = 0; ; attempt++) {
      const { rows } = await pool.query<Row>({
        name: "quota_reserve_batch",
        text: RESERVE_BATCH,
        values: [
          first.input.userId,
          kind,
          utcDay(first.now),
          holdIds,
          batch.map((c) => String(c.input.amount)),
          batch.map((c) => String(c.input.dailyAllowance)),
          batch.map((c) => c.input.requestId),
          batch.map((c) => c.input.instanceId),
          batch.map((c) => c.now),
        ],
      });
      const row = rows[0]!;
      if (row.raced) {
        if (attempt >= 3) throw new Error(`quota account of ${first.input.userId} could not be created`);
        continue;
      }
      const held = new Set(row.held);
      const [used, reserved] = [BigInt(row.used), BigInt(row.reserved)];
      return holdIds.map((holdId) =>
        held.has(holdId) ? { ok: true, holdId, accountId: row.account_id! } : { ok: false, used, reserved },
      );
    }
  }

  // One statement in flight per account (user and UTC day).
  const reserve = createBatcher<Call, ReserveOutcome>(run, {
    maxBatch,
    keyOf: (call) => `${call.input.userId}/${utcDay(call.now)}`,
  });
  return (input, now) => reserve({ input, now });
}
