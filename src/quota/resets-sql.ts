import type pg from "pg";
import type { Queryable } from "../db/pool.js";
import { GIFT_PERPETUAL } from "./account-kinds.js";
import { ensureAccount, ungatheredReturned, unfoldedPosted } from "./account-sql.js";
import { dayStartAt } from "../time/day.js";
import { restoreRow } from "./restore-sql.js";
import { isoWeek } from "../time/week.js";

// Reserve resets on the ledger (docs/billing.md, "Reserve resets"): the week's resets and the gifted ones are
// accounts (kinds weekly_resets and gifted_resets); a use posts one reset on one of them and restores the day's
// allowance, in one transaction under the day's account lock.

// The day's account, locked first by every use: two uses of one user (a manual one, a retried one, an automatic
// one in admission) are serialised here, as the lease syncs of that account are.
const LOCK_DAY = `
select a.id::text, a.credits::text, a.restored::text, a.debits_posted::text, a.debits_pending::text, u.auto_reset_enabled
from quota_accounts a join users u on u.id = a.user_id
where a.user_id = $1::uuid and a.kind = 'daily_allowance' and a.period = $2::text
for no key update of a`;

const EARLIER_USE = `select kind, day, restored::text, created_at from quota_reset_uses where id = $1::uuid`;

// The week's base is the plan's, stated by the caller on every use (as the day's allowance is on every sync), unless
// the account holds a newer revision of it (account-kinds.ts, baseRevision).
const STATE_WEEK = `
update quota_accounts set credits = $3::bigint, credits_revision = $4::bigint, updated_at = now()
where user_id = $1::uuid and kind = 'weekly_resets' and period = $2::text and credits <> $3::bigint and credits_revision <= $4::bigint`;

// The reset to use: the week's first, then the gift that expires first (the perpetual ones last).
const PICK = `
select id::text, kind from quota_accounts
where user_id = $1::uuid
  and ((kind = 'weekly_resets' and period = $2::text) or (kind = 'gifted_resets' and (period = $4::text or period > $3::text)))
  and credits + restored - debits_posted - debits_pending > 0
order by kind = 'gifted_resets', period = $4::text, period
limit 1
for no key update`;

// One reset, posted as a hold of 1 (so the account reconciles like any other), and the day's restoration.
const POST_RESET = `
with hold as (
  insert into quota_holds (account_id, amount, charged, status, request_id, resolved_at)
  values ($1::bigint, 1, 1, 'posted', 'reset:' || $2::text, now())
)
update quota_accounts set debits_posted = debits_posted + 1, updated_at = now() where id = $1::bigint`;

const RECORD_USE = `
insert into quota_reset_uses (id, user_id, account_id, kind, day, restored, trigger)
values ($1::uuid, $2::uuid, $3::bigint, $4::text, $5::text, $6::bigint, $7::text)
returning created_at`;

/** The restorations' source of a reset's use (docs/billing.md, "Restorations"). */
export const RESET_SOURCE = "reserve_reset";

export type ResetKind = "weekly" | "gifted";
export type ResetTrigger = "manual" | "automatic";

export interface UseResetRow {
  userId: string;
  /** The use's id (a UUID): the same id again is the same use, never a second reset. */
  id: string;
  /** The day restored (YYYY-MM-DD); the weekly resets used are of its ISO week. */
  day: string;
  /** The plan's weekly resets, the base of the week's account, and the revision of that view of the plan. */
  weeklyBase: bigint;
  baseRevision: bigint;
  /** Gifts expiring at or before this instant (ISO 8601) are gone. */
  nowIso: string;
  trigger: ResetTrigger;
  /** An automatic use (admission): made only if the account is under the threshold and the reset lets the request in. */
  automatic?: AutomaticCheck;
}

/** What an automatic use checks under the day's lock (docs/billing.md, "Automatic resets"). */
export interface AutomaticCheck {
  /** Units the asking process holds leased and unused: remaining to the user, though pending in the row. */
  ownFree: bigint;
  /** The request's hold: no reset is used if even the restored allowance could not hold it. */
  need: bigint;
  /** A reset is used when fewer units than this remain. */
  threshold: bigint;
  /**
   * Charges the same transaction posts after the use (the lease sync the reset precedes): spent already, so restored
   * with the rest. Otherwise they would be left spent, and a manual use right after would spend a second reset.
   */
  posting: bigint;
}

export type UseResetOutcome =
  | { outcome: "used"; duplicate: boolean; kind: ResetKind; day: string; restored: bigint; createdAt: Date }
  /** Nothing spent today that a reset could restore: no reset is posted. */
  | { outcome: "nothing_spent" }
  /** No weekly or unexpired gifted reset left. */
  | { outcome: "none_available" };

/** An automatic use's outcomes: a manual use's, and the reasons it was not tried. */
export type AutoResetOutcome =
  | UseResetOutcome
  /** The user has automatic resets off. */
  | { outcome: "disabled" }
  /** The threshold or more remain (another use, or a settlement, came first). */
  | { outcome: "not_needed" }
  /** Even the restored allowance could not hold the request. */
  | { outcome: "wont_fit" };

/**
 * Uses one reset for the user now, under the day's account lock (an automatic one from admission, with the id of
 * the lease sync it precedes), inside the caller's transaction (`client`), so that what the reset is for commits
 * with it or not at all: the hold it lets in, or the record of an idempotent call. The day's account must exist
 * (ensureAccount); the week's is created here, after the day's lock: every use locks the day, then the week, then
 * a gift.
 */
export function useResetIn(client: pg.PoolClient, r: UseResetRow & { automatic: AutomaticCheck }): Promise<AutoResetOutcome>;
export function useResetIn(client: pg.PoolClient, r: UseResetRow & { automatic?: undefined }): Promise<UseResetOutcome>;
export function useResetIn(client: pg.PoolClient, r: UseResetRow): Promise<AutoResetOutcome>;
export async function useResetIn(client: pg.PoolClient, r: UseResetRow): Promise<AutoResetOutcome> {
  const locked = (await client.query<DayRow>(LOCK_DAY, [r.userId, r.day])).rows[0];
  if (!locked) throw new Error(`the day's account of user ${r.userId} for ${r.day} is missing`);
  const earlier = await earlierUse(client, r.id);
  if (earlier) return earlier;
  const day = await withUnfolded(client, locked);
  // Restored = the day's remaining back to the plan's allowance with the holds in flight still held: what was
  // posted and not yet restored (an overshoot below zero included), and what this transaction posts next.
  const spent = BigInt(day.debits_posted) + (r.automatic?.posting ?? 0n) - BigInt(day.restored);
  if (r.automatic) {
    const refused = automaticRefusal(day, spent, r.automatic);
    if (refused) return refused;
  }
  if (spent <= 0n) return { outcome: "nothing_spent" };
  const week = isoWeek(dayStartAt(r.day));
  await ensureAccount(client, { userId: r.userId, kind: "weekly_resets", period: week }, r.weeklyBase, r.baseRevision);
  await client.query(STATE_WEEK, [r.userId, week, String(r.weeklyBase), String(r.baseRevision)]);
  const pick = (await client.query<{ id: string; kind: string }>(PICK, [r.userId, week, r.nowIso, GIFT_PERPETUAL])).rows[0];
  if (!pick) return { outcome: "none_available" };
  const kind: ResetKind = pick.kind === "weekly_resets" ? "weekly" : "gifted";
  await client.query(POST_RESET, [pick.id, r.id]);
  // The day's restoration: `spent`, read under the day's lock.
  const restored = await restoreRow(client, {
    userId: r.userId,
    kind: "daily_allowance",
    period: r.day,
    amount: spent,
    upToSpent: false,
    source: RESET_SOURCE,
    reference: r.id,
  });
  if (restored.account === "missing" || restored.applied !== spent) throw new Error(`the restoration of reset use ${r.id} did not apply`);
  const recorded = await client.query<{ created_at: Date }>(RECORD_USE, [r.id, r.userId, pick.id, kind, r.day, String(spent), r.trigger]);
  return { outcome: "used", duplicate: false, kind, day: r.day, restored: spent, createdAt: recorded.rows[0]!.created_at };
}

// What the day's open leases posted and have not folded yet, and what they gave back and no sync gathered yet, read
// in a statement after the lock (account-sql.ts, unfoldedPosted): with them, posted is what was spent and pending
// what is held (an automatic use must not spend a reset on units another process gave back).
const UNFOLDED = `select ${unfoldedPosted("$1::bigint")}::text as n, ${ungatheredReturned("$1::bigint")}::text as returned`;

async function withUnfolded(client: pg.PoolClient, day: DayRow): Promise<DayRow> {
  const query = { name: "quota_day_unfolded", text: UNFOLDED, values: [day.id] };
  const row = (await client.query<{ n: string; returned: string }>(query)).rows[0]!;
  const n = BigInt(row.n);
  return Object.assign({}, day, {
    debits_posted: String(BigInt(day.debits_posted) + n),
    debits_pending: String(BigInt(day.debits_pending) - n - BigInt(row.returned)),
  });
}

interface DayRow {
  id: string;
  credits: string;
  restored: string;
  debits_posted: string;
  debits_pending: string;
  auto_reset_enabled: boolean;
}

/** Why an automatic use does not happen, read from the locked day; undefined when it does. */
function automaticRefusal(day: DayRow, spent: bigint, check: AutomaticCheck): AutoResetOutcome | undefined {
  if (!day.auto_reset_enabled) return { outcome: "disabled" };
  const pending = BigInt(day.debits_pending);
  const remaining = BigInt(day.credits) + BigInt(day.restored) - BigInt(day.debits_posted) - pending + check.ownFree;
  if (remaining >= check.threshold) return { outcome: "not_needed" };
  const restoredRemaining = remaining + (spent > 0n ? spent : 0n);
  if (restoredRemaining < check.need) return { outcome: "wont_fit" };
  return undefined;
}

async function earlierUse(client: pg.PoolClient, id: string): Promise<UseResetOutcome | undefined> {
  const row = (await client.query<{ kind: ResetKind; day: string; restored: string; created_at: Date }>(EARLIER_USE, [id])).rows[0];
  return (
    row && { outcome: "used", duplicate: true, kind: row.kind, day: row.day, restored: BigInt(row.restored), createdAt: row.created_at }
  );
}

// One statement: the grant's record and the gift account's new credits commit together.
const GRANT = `
with account as (
  insert into quota_accounts (user_id, kind, period, credits) values ($1::uuid, 'gifted_resets', $2::text, $3::bigint)
  on conflict (user_id, kind, period) do update set credits = quota_accounts.credits + excluded.credits, updated_at = now()
  returning id
)
insert into quota_reset_grants (user_id, account_id, count, expires_at, note, granted_by)
select $1::uuid, id, $3::int, $4::timestamptz, $5::text, $6::text from account
returning id::text, created_at`;

export interface GrantRow {
  userId: string;
  count: number;
  /** Null: never expires. */
  expiresAt: Date | null;
  note: string;
  grantedBy: string;
}

export async function grantResetsRow(pool: Queryable, g: GrantRow): Promise<{ id: string; createdAt: Date }> {
  if (!Number.isSafeInteger(g.count) || g.count <= 0) throw new RangeError(`a grant must be a positive count, got ${g.count}`);
  const period = g.expiresAt ? g.expiresAt.toISOString() : GIFT_PERPETUAL;
  const { rows } = await pool.query<{ id: string; created_at: Date }>(GRANT, [g.userId, period, g.count, g.expiresAt, g.note, g.grantedBy]);
  return { id: rows[0]!.id, createdAt: rows[0]!.created_at };
}

const GIFTS = `
select period, (credits + restored - debits_posted - debits_pending)::text as left_count from quota_accounts
where user_id = $1::uuid and kind = 'gifted_resets' and (period = $3::text or period > $2::text)
  and credits + restored - debits_posted - debits_pending > 0
order by period = $3::text, period`;

const WEEK = `
select (debits_posted + debits_pending - restored)::text as used from quota_accounts
where user_id = $1::uuid and kind = 'weekly_resets' and period = $2::text`;

const HISTORY_LIMIT = 50;

const GRANTS = `
select id::text, count, expires_at, note, granted_by, created_at from quota_reset_grants
where user_id = $1::uuid order by created_at desc, id desc limit ${HISTORY_LIMIT}`;

const USES = `
select id::text, kind, day, restored::text, trigger, created_at from quota_reset_uses
where user_id = $1::uuid order by created_at desc, id desc limit ${HISTORY_LIMIT}`;

export interface ResetsRows {
  /** Resets of this week used (posted) so far. */
  weeklyUsed: bigint;
  gifts: { expiresAt: Date | null; left: bigint }[];
  grants: { id: string; count: number; expiresAt: Date | null; note: string; grantedBy: string; createdAt: Date }[];
  uses: { id: string; kind: ResetKind; day: string; restored: bigint; trigger: ResetTrigger; createdAt: Date }[];
}

/**
 * The user's resets now: this week's used, the unexpired gifts left (soonest expiry first), the latest records. On a
 * transaction's client, what that transaction changed too.
 */
export async function readResetsRows(q: Queryable, userId: string, week: string, nowIso: string): Promise<ResetsRows> {
  // One after the other: a transaction's client runs one statement at a time.
  const week_ = await q.query<{ used: string }>(WEEK, [userId, week]);
  const gifts = await q.query<{ period: string; left_count: string }>(GIFTS, [userId, nowIso, GIFT_PERPETUAL]);
  const grants = await q.query<{
    id: string;
    count: number;
    expires_at: Date | null;
    note: string;
    granted_by: string;
    created_at: Date;
  }>(GRANTS, [userId]);
  const uses = await q.query<{ id: string; kind: ResetKind; day: string; restored: string; trigger: ResetTrigger; created_at: Date }>(
    USES,
    [userId],
  );
  return {
    weeklyUsed: BigInt(week_.rows[0]?.used ?? "0"),
    gifts: gifts.rows.map((g) => ({ expiresAt: g.period === GIFT_PERPETUAL ? null : new Date(g.period), left: BigInt(g.left_count) })),
    grants: grants.rows.map((g) => ({
      id: g.id,
      count: g.count,
      expiresAt: g.expires_at,
      note: g.note,
      grantedBy: g.granted_by,
      createdAt: g.created_at,
    })),
    uses: uses.rows.map((u) => ({
      id: u.id,
      kind: u.kind,
      day: u.day,
      restored: BigInt(u.restored),
      trigger: u.trigger,
      createdAt: u.created_at,
    })),
  };
}
