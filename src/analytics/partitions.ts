import type pg from "pg";
import type { Pool } from "../db/pool.js";
import { inTransaction } from "../db/transaction.js";
import { addDays, daysBetween, dayOf, partitionDay, partitionName, type Day } from "./partition-days.js";

// The request log's day partitions (docs/operations.md, "The request log's partitions"): created ahead by every
// serving process at start and by the log_partitions task, and the rows of the table as it was before migration
// 0025 moved into them. Each process may run any of this at the same moment as another: an advisory lock
// (transaction-scoped, so a lost connection lets go of it) makes one create or move at a time, and the others
// find the work done.

// Arbitrary constants, distinct from every other advisory lock of the gateway.
const CREATE_LOCK = 3_400_251;
const MOVE_LOCK = 3_400_252;
const DAYS_PER_TRANSACTION = 4;

/** The table migration 0025 renamed, emptied by moveUnpartitioned and then dropped. */
export const UNPARTITIONED = "request_logs_unpartitioned";

// Every column, named: the old table and a new partition are made with LIKE, so their order matches today, but a
// later migration may add a column to the log while the old table still waits to be emptied.
const COLUMNS = `request_id, user_id, key_id, route, client_protocol, public_model, upstream_model, provider, fallback_path,
  status, error_class, error_code, input_tokens, output_tokens, cached_tokens, quota_charged, cost_usd, upstream_cost_usd,
  usage_source, gpt_image_usage_fallback, latency_ms, ttfb_ms, streamed, received_at, created_at`;

const ATTACHED = `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
where i.inhparent = 'request_logs'::regclass`;

/** The days whose partitions are attached to request_logs. */
async function attachedDays(db: Pick<pg.ClientBase, "query">): Promise<Set<Day>> {
  const { rows } = await db.query<{ name: string }>(ATTACHED);
  const days = new Set<Day>();
  for (const { name } of rows) {
    const day = partitionDay(name);
    if (day !== null) days.add(day);
  }
  return days;
}

// A literal, not a parameter (DDL takes none): `day` is a checked YYYY-MM-DD.
const bound = (day: Day) => `'${day} 00:00:00+00'`;

// The partition is made apart and then attached: CREATE TABLE ... PARTITION OF would lock the whole log against
// reads and writes, ATTACH PARTITION only against other DDL (it also scans the DEFAULT partition, which is empty
// unless something wrote a day before its partition existed). The rows of the day the DEFAULT partition holds
// move into it first, in the same transaction, else the attach would refuse them.
async function createDay(client: pg.PoolClient, day: Day): Promise<void> {
  const name = partitionName(day);
  await client.query(`create table "${name}" (like request_logs including defaults including constraints)`);
  await client.query(
    `with moved as (
      delete from request_logs_default where created_at >= ${bound(day)} and created_at < ${bound(addDays(day, 1))} returning ${COLUMNS}
    ) insert into "${name}" (${COLUMNS}) select ${COLUMNS} from moved`,
  );
  await client.query(`alter table request_logs attach partition "${name}" for values from (${bound(day)}) to (${bound(addDays(day, 1))})`);
}

/**
 * Creates the partitions of the days from `from` to `to` (both included) that do not exist yet; returns how
 * many it created. Idempotent, and safe when several processes run it at once.
 */
export async function ensurePartitions(pool: Pool, from: Day, to: Day): Promise<number> {
  const before = await attachedDays(pool);
  const missing = daysBetween(from, to).filter((day) => !before.has(day));
  let created = 0;
  // A few days per transaction: each day takes locks on its table and indexes until commit, and the old table of
  // a log kept for ever may span years.
  for (let i = 0; i < missing.length; i += DAYS_PER_TRANSACTION) {
    const chunk = missing.slice(i, i + DAYS_PER_TRANSACTION);
    created += await inTransaction(pool, async (client) => {
      await client.query("select pg_advisory_xact_lock($1)", [CREATE_LOCK]);
      // Read again under the lock: another process may have created them meanwhile.
      const existing = await attachedDays(client);
      let made = 0;
      for (const day of chunk) {
        if (existing.has(day)) continue;
        await createDay(client, day);
        made += 1;
      }
      return made;
    });
  }
  return created;
}

/** The partitions a serving process makes sure of: today and `aheadDays` days after it (by the database's clock). */
export async function ensureAhead(pool: Pool, aheadDays: number): Promise<number> {
  const { rows } = await pool.query<{ today: string }>("select (now() at time zone 'UTC')::date::text as today");
  const today = rows[0]!.today;
  return ensurePartitions(pool, today, addDays(today, aheadDays));
}

export interface MoveResult {
  /** Rows moved from the old table by this run. */
  rows: number;
  /** Whether the old table is gone (dropped by this run or before it). */
  done: boolean;
}

/** Whether the table as it was before migration 0025 still waits to be emptied. */
export async function oldTableExists(db: Pick<pg.ClientBase, "query">): Promise<boolean> {
  const { rows } = await db.query<{ exists: boolean }>(`select to_regclass('${UNPARTITIONED}') is not null as exists`);
  return rows[0]!.exists;
}

// One batch, newest first (what users and support look up is recent), in one short transaction: a row is in
// exactly one of the two tables at every moment. A row already in the new table (a batch the writer retried across
// the upgrade) is dropped from the old one. Null when another process is moving.
const MOVE_BATCH = `
with moved as (
  delete from ${UNPARTITIONED} where request_id in (
    select request_id from ${UNPARTITIONED} order by created_at desc limit $1::int
  ) returning ${COLUMNS}
), inserted as (
  insert into request_logs (${COLUMNS}) select ${COLUMNS} from moved on conflict (request_id, created_at) do nothing
)
select count(*)::int as moved from moved`;

async function moveBatch(pool: Pool, batchRows: number): Promise<number | null> {
  return inTransaction(pool, async (client) => {
    const { rows } = await client.query<{ got: boolean }>("select pg_try_advisory_xact_lock($1) as got", [MOVE_LOCK]);
    if (!rows[0]!.got) return null;
    if (!(await oldTableExists(client))) return 0;
    const moved = await client.query<{ moved: number }>({ name: "request_logs_move", text: MOVE_BATCH, values: [batchRows] });
    return moved.rows[0]!.moved;
  });
}

// Dropped only empty, under the mover's lock; the lock_timeout keeps a long reader of the old table from queueing
// everything behind the drop's exclusive lock (the next run tries again).
async function dropIfEmpty(pool: Pool): Promise<boolean> {
  return inTransaction(pool, async (client) => {
    const { rows } = await client.query<{ got: boolean }>("select pg_try_advisory_xact_lock($1) as got", [MOVE_LOCK]);
    if (!rows[0]!.got || !(await oldTableExists(client))) return false;
    await client.query("set local lock_timeout = '5s'");
    const left = await client.query(`select 1 from ${UNPARTITIONED} limit 1`);
    if (left.rows.length > 0) return false;
    await client.query(`drop table ${UNPARTITIONED}`);
    return true;
  });
}

/**
 * Moves the rows of the table as it was before migration 0025 into the partitioned log, `batchRows` at a time, and
 * drops it once empty. Creates the partitions of the days it holds first, so that none lands in the DEFAULT
 * partition. Safe to run on several processes at once (one moves, the others return) and to stop at any batch.
 */
export async function moveUnpartitioned(pool: Pool, batchRows: number): Promise<MoveResult> {
  const span = await pool
    .query<{ first: Date | null; last: Date | null }>(`select min(created_at) as first, max(created_at) as last from ${UNPARTITIONED}`)
    .catch((err: unknown) => {
      // 42P01: dropped already (before this run, or by another process meanwhile).
      if ((err as { code?: unknown }).code === "42P01") return null;
      throw err;
    });
  if (!span) return { rows: 0, done: true };
  const { first, last } = span.rows[0]!;
  if (first && last) await ensurePartitions(pool, dayOf(first), dayOf(last));
  let rows = 0;
  for (;;) {
    const moved = await moveBatch(pool, batchRows);
    if (moved === null) return { rows, done: false };
    rows += moved;
    if (moved < batchRows) break;
  }
  return { rows, done: await dropIfEmpty(pool) };
}
