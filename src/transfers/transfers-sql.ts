import type pg from "pg";
import type { Pool } from "../db/pool.js";
import { inTransaction } from "../db/transaction.js";
import { ledgerInTransaction } from "../quota/in-transaction.js";
import { refusalOf, transferableOf, type DayTotals, type PolicyValues, type SendRefusal } from "./rules.js";

// A token transfer on the ledger (docs/billing.md, "Token transfers"): the send takes a durable hold on the
// sender's day and writes the pending record, in one transaction; the completion (by the sending process once the
// send commits, and by graphile-worker's complete_transfer as the backstop) posts what the recipient could take and
// restores that much of the recipient's day, in one transaction, exactly once: it acts only on a pending record,
// which it locks first. Locks follow the ledger's one order (docs/billing.md, "Locks"): after the transfer's own
// lock, the ledger takes them (src/quota/in-transaction.ts).

/** The restorations' source of a received transfer (docs/billing.md, "Restorations"). */
export const TRANSFER_SOURCE = "token_transfer";
export const COMPLETE_TRANSFER_TASK = "complete_transfer";

// Every send takes this transaction-scoped lock first: the limits (the sender's, the recipient's and the
// service's, each a sum over the day's records) are read and the new record written by one send at a time,
// across every process. Sends are rare next to requests, and a send holds it for a few statements.
const SEND_LOCK = `select pg_advisory_xact_lock(7210022)`;

export interface PolicyRow extends PolicyValues {
  revision: number;
  updatedBy: string | null;
  updatedAt: Date | null;
}

const READ_POLICY = `
select revision, enabled, min_amount::text, send_daily_limit::text, receive_daily_limit::text, service_daily_limit::text,
  updated_by, updated_at
from token_transfer_policy where id = 1`;

interface RawPolicy {
  revision: number;
  enabled: boolean;
  min_amount: string;
  send_daily_limit: string;
  receive_daily_limit: string;
  service_daily_limit: string;
  updated_by: string;
  updated_at: Date;
}

/** The stored policy; undefined before the first save (the config's defaults then apply, at revision 0). */
export async function readPolicyRow(pool: Pool | pg.PoolClient): Promise<PolicyRow | undefined> {
  const row = (await pool.query<RawPolicy>(READ_POLICY)).rows[0];
  return (
    row && {
      revision: row.revision,
      enabled: row.enabled,
      minAmount: BigInt(row.min_amount),
      sendDailyLimit: BigInt(row.send_daily_limit),
      receiveDailyLimit: BigInt(row.receive_daily_limit),
      serviceDailyLimit: BigInt(row.service_daily_limit),
      updatedBy: row.updated_by,
      updatedAt: row.updated_at,
    }
  );
}

// Optimistic revision: written only if the stored revision is still the one the caller read (0: none stored).
const SAVE_POLICY = `
with saved as (
  insert into token_transfer_policy (id, revision, enabled, min_amount, send_daily_limit, receive_daily_limit, service_daily_limit, updated_by)
  select 1, $1::int + 1, $2::bool, $3::bigint, $4::bigint, $5::bigint, $6::bigint, $7::text
  where $1::int = 0
  on conflict (id) do nothing
  returning revision
), updated as (
  update token_transfer_policy set revision = revision + 1, enabled = $2::bool, min_amount = $3::bigint, send_daily_limit = $4::bigint,
    receive_daily_limit = $5::bigint, service_daily_limit = $6::bigint, updated_by = $7::text, updated_at = now()
  where id = 1 and revision = $1::int and $1::int > 0
  returning revision
)
select revision from saved union all select revision from updated`;

/** The new revision, or null when `readAt` is stale (nothing is written). */
export async function savePolicyRow(pool: Pool, readAt: number, p: PolicyValues, updatedBy: string): Promise<number | null> {
  const values = [
    readAt,
    p.enabled,
    String(p.minAmount),
    String(p.sendDailyLimit),
    String(p.receiveDailyLimit),
    String(p.serviceDailyLimit),
    updatedBy,
  ];
  const row = (await pool.query<{ revision: number }>(SAVE_POLICY, values)).rows[0];
  return row ? row.revision : null;
}

export interface TransferRow {
  id: string;
  senderId: string;
  senderEmail: string;
  recipientId: string;
  recipientEmail: string;
  amount: bigint;
  day: string;
  status: "pending" | "completed" | "refused";
  reason: string | null;
  applied: bigint | null;
  returned: bigint | null;
  createdAt: Date;
  completedAt: Date | null;
}

const COLUMNS = `t.id::text, t.sender_id::text, s.email as sender_email, t.recipient_id::text, r.email as recipient_email, t.amount::text,
  t.day, t.status, t.reason, t.applied::text, t.returned::text, t.created_at, t.completed_at`;
const FROM = `token_transfers t join users s on s.id = t.sender_id join users r on r.id = t.recipient_id`;

interface RawTransfer {
  id: string;
  sender_id: string;
  sender_email: string;
  recipient_id: string;
  recipient_email: string;
  amount: string;
  day: string;
  status: TransferRow["status"];
  reason: string | null;
  applied: string | null;
  returned: string | null;
  created_at: Date;
  completed_at: Date | null;
}

const toTransfer = (r: RawTransfer): TransferRow => ({
  id: r.id,
  senderId: r.sender_id,
  senderEmail: r.sender_email,
  recipientId: r.recipient_id,
  recipientEmail: r.recipient_email,
  amount: BigInt(r.amount),
  day: r.day,
  status: r.status,
  reason: r.reason,
  applied: r.applied === null ? null : BigInt(r.applied),
  returned: r.returned === null ? null : BigInt(r.returned),
  createdAt: r.created_at,
  completedAt: r.completed_at,
});

async function transferById(client: Pool | pg.PoolClient, id: string): Promise<TransferRow | undefined> {
  const row = (await client.query<RawTransfer>(`select ${COLUMNS} from ${FROM} where t.id = $1::uuid`, [id])).rows[0];
  return row && toTransfer(row);
}

// What counts against a limit: a pending transfer's amount, a completed one's applied part (what moved).
const COUNTED = `coalesce(sum(case when status = 'pending' then amount when status = 'completed' then applied else 0 end), 0)::text`;
const LIMITS = `
select
  (select ${COUNTED} from token_transfers where day = $1::text and sender_id = $2::uuid) as sent,
  (select ${COUNTED} from token_transfers where day = $1::text and recipient_id = $3::uuid) as received,
  (select ${COUNTED} from token_transfers where day = $1::text) as service,
  (select coalesce(sum(applied), 0)::text from token_transfers where day = $1::text and recipient_id = $2::uuid and status = 'completed')
    as received_by_sender`;

export async function dayTotals(pool: Pool | pg.PoolClient, day: string, userId: string, recipientId: string): Promise<DayTotals> {
  const row = (
    await pool.query<{ sent: string; received: string; service: string; received_by_sender: string }>(LIMITS, [day, userId, recipientId])
  ).rows[0]!;
  return {
    sent: BigInt(row.sent),
    received: BigInt(row.received),
    service: BigInt(row.service),
    receivedBySender: BigInt(row.received_by_sender),
  };
}

const EARLIER = `select ${COLUMNS} from ${FROM} where t.sender_id = $1::uuid and t.idempotency_key = $2::text`;

/** The transfer a sender made with this idempotency key, if any. */
export async function earlierTransfer(pool: Pool, senderId: string, key: string): Promise<TransferRow | undefined> {
  const row = (await pool.query<RawTransfer>(EARLIER, [senderId, key])).rows[0];
  return row && toTransfer(row);
}

const INSERT = `
insert into token_transfers (id, sender_id, recipient_id, idempotency_key, amount, day, status, hold_id)
values ($1::uuid, $2::uuid, $3::uuid, $4::text, $5::bigint, $6::text, 'pending', $7::uuid)`;

const ENQUEUE = `select graphile_worker.add_job($1::text, json_build_object('id', $2::text), job_key := $3::text)`;

export interface SendRow {
  id: string;
  holdId: string;
  senderId: string;
  recipientId: string;
  idempotencyKey: string;
  amount: bigint;
  day: string;
  /** The sender's plan's daily allowance (the base of their day's account). */
  senderBase: bigint;
  /** When the sender's hold expires if nothing completed it (after the day). */
  holdExpiresAt: Date;
}

export type SendOutcome =
  | { outcome: "created"; transfer: TransferRow }
  | { outcome: "earlier"; transfer: TransferRow }
  | { outcome: "key_reused" }
  | ({ outcome: "refused" } & SendRefusal);

/**
 * One send, in one transaction under the send lock: the same key again returns the first transfer (or
 * key_reused with another payload); else the policy and every limit are checked with the sender's day locked,
 * the durable hold taken, the record written and its completion queued.
 */
export function sendRows(pool: Pool, s: SendRow, policy: (client: pg.PoolClient) => Promise<PolicyValues>): Promise<SendOutcome> {
  return inTransaction(pool, async (client): Promise<SendOutcome> => {
    await client.query(SEND_LOCK);
    const earlier = (await client.query<RawTransfer>(EARLIER, [s.senderId, s.idempotencyKey])).rows[0];
    if (earlier) {
      const same = earlier.recipient_id === s.recipientId && BigInt(earlier.amount) === s.amount;
      return same ? { outcome: "earlier", transfer: toTransfer(earlier) } : { outcome: "key_reused" };
    }
    const p = await policy(client);
    const totals = await dayTotals(client, s.day, s.senderId, s.recipientId);
    const ledger = ledgerInTransaction(client);
    const remaining = await ledger.lockDay(s.senderId, s.day, s.senderBase);
    const refused = refusalOf(p, totals, s.amount, transferableOf(remaining, totals));
    if (refused) return { outcome: "refused", ...refused };
    const held = await ledger.reserveDurable({
      id: s.holdId,
      userId: s.senderId,
      kind: "daily_allowance",
      period: s.day,
      base: s.senderBase,
      // Never over the account's own view of the plan: the sender's leases state it with its revision.
      baseRevision: 0n,
      amount: s.amount,
      reference: `transfer:${s.id}`,
      expiresAt: s.holdExpiresAt,
    });
    if (held.account === "missing" || !held.inserted) throw new Error(`the hold of transfer ${s.id} was not taken`);
    await client.query(INSERT, [s.id, s.senderId, s.recipientId, s.idempotencyKey, String(s.amount), s.day, s.holdId]);
    await client.query(ENQUEUE, [COMPLETE_TRANSFER_TASK, s.id, `transfer:${s.id}`]);
    return { outcome: "created", transfer: (await transferById(client, s.id))! };
  });
}

const LOCK_TRANSFER = `
select t.status, t.day, t.amount::text, t.hold_id::text, t.recipient_id::text, u.plan,
  (u.disabled_at is not null or u.transfers_receive_disabled) as unavailable
from token_transfers t join users u on u.id = t.recipient_id
where t.id = $1::uuid
for update of t`;

const END = `
update token_transfers set status = $2::text, reason = $3::text, applied = $4::bigint, returned = $5::bigint, completed_at = now()
where id = $1::uuid`;

export interface CompleteContext {
  /** The UTC day now (by the ledger's clock): a transfer of an earlier day ends with no effect. */
  today: string;
  /** The recipient's plan's daily allowance (the base of an account created here). */
  baseOf(plan: string): bigint;
}

/**
 * Completes a pending transfer, once: the record locked first, then the sender's hold, then both days (the
 * sender's and the recipient's, created if needed) in ascending id order, before either is written: the crossing
 * transfer (B to A while A to B) locks them in the same order. Undefined when there is no such transfer; a
 * transfer no longer pending is returned as it is.
 */
export function completeRows(pool: Pool, id: string, ctx: CompleteContext): Promise<TransferRow | undefined> {
  return inTransaction(pool, async (client) => {
    const t = (
      await client.query<{
        status: string;
        day: string;
        amount: string;
        hold_id: string;
        recipient_id: string;
        plan: string;
        unavailable: boolean;
      }>(LOCK_TRANSFER, [id])
    ).rows[0];
    if (!t) return undefined;
    if (t.status !== "pending") return transferById(client, id);
    const amount = BigInt(t.amount);
    const ledger = ledgerInTransaction(client);
    const refuse = async (reason: string) => {
      await ledger.resolveDurable(t.hold_id, null);
      await client.query(END, [id, "refused", reason, "0", String(amount)]);
      return transferById(client, id);
    };
    if (t.day !== ctx.today) return refuse("day_ended");
    if (t.unavailable) return refuse("recipient_unavailable");
    const recipientDay = { userId: t.recipient_id, kind: "daily_allowance", period: t.day };
    if (!(await ledger.lockHoldWithAccount(t.hold_id, recipientDay, ctx.baseOf(t.plan)))) {
      throw new Error(`the hold of transfer ${id} is missing`);
    }
    // The recipient's spent units, never above them: the day's remaining goes back at most to its allowance.
    const restored = await ledger.restore({
      userId: t.recipient_id,
      kind: "daily_allowance",
      period: t.day,
      amount,
      upToSpent: true,
      source: TRANSFER_SOURCE,
      reference: id,
    });
    const applied = restored.account === "found" && restored.applied !== null ? restored.applied : 0n;
    if (applied === 0n) return refuse("nothing_to_refill");
    await ledger.resolveDurable(t.hold_id, applied);
    await client.query(END, [id, "completed", null, String(applied), String(amount - applied)]);
    return transferById(client, id);
  });
}

const HISTORY = `
select ${COLUMNS} from ${FROM}
where (t.sender_id = $1::uuid or t.recipient_id = $1::uuid)
  and ($2::timestamptz is null or (t.created_at, t.id) < ($2::timestamptz, $3::uuid))
order by t.created_at desc, t.id desc
limit $4::int`;

/** The user's transfers, sent and received, newest first, after the cursor (created_at, id). */
export async function historyRows(
  pool: Pool,
  userId: string,
  after: { createdAt: Date; id: string } | null,
  limit: number,
): Promise<TransferRow[]> {
  const { rows } = await pool.query<RawTransfer>(HISTORY, [userId, after?.createdAt ?? null, after?.id ?? null, limit]);
  return rows.map(toTransfer);
}

const LATEST = `
select ${COLUMNS} from ${FROM}
where $1::uuid is null or t.sender_id = $1::uuid or t.recipient_id = $1::uuid
order by t.created_at desc, t.id desc
limit 100`;

/** The latest 100 transfers, of one user (sent or received) or of everyone. */
export async function latestRows(pool: Pool, userId: string | null): Promise<TransferRow[]> {
  return (await pool.query<RawTransfer>(LATEST, [userId])).rows.map(toTransfer);
}

const RECEIVE_FLAG = `update users set transfers_receive_disabled = $2::bool where id = $1::uuid returning transfers_receive_disabled`;

export async function setReceiveDisabled(pool: Pool, userId: string, disabled: boolean): Promise<boolean> {
  return (await pool.query<{ transfers_receive_disabled: boolean }>(RECEIVE_FLAG, [userId, disabled])).rows[0]!.transfers_receive_disabled;
}

// Recipient lookups per user and minute (previews, and sends naming no one who accepts transfers): one statement
// that counts this one and answers the count.
const COUNT_LOOKUP = `
insert into token_transfer_previews (user_id, window_start, count) values ($1::uuid, date_trunc('minute', $2::timestamptz), 1)
on conflict (user_id, window_start) do update set count = token_transfer_previews.count + 1
returning count`;

/** Windows of the lookups' rate that have ended (the auth prune runs it every 15 minutes). */
export async function prunePreviews(pool: Pool, before: Date): Promise<number> {
  const result = await pool.query(`delete from token_transfer_previews where window_start < date_trunc('minute', $1::timestamptz)`, [
    before,
  ]);
  return result.rowCount ?? 0;
}

const READ_LOOKUPS = `select count from token_transfer_previews where user_id = $1::uuid and window_start = date_trunc('minute', $2::timestamptz)`;

export async function countLookup(pool: Pool, userId: string, now: Date): Promise<number> {
  return (await pool.query<{ count: number }>(COUNT_LOOKUP, [userId, now])).rows[0]!.count;
}

export async function lookupsThisMinute(pool: Pool, userId: string, now: Date): Promise<number> {
  return (await pool.query<{ count: number }>(READ_LOOKUPS, [userId, now])).rows[0]?.count ?? 0;
}
