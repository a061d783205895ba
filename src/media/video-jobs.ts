import type { Pool, Queryable } from "../db/pool.js";
import type { VideoJobStatus, VideoLocation } from "../providers/types.js";

// The video_jobs table's statements (./schema.ts). A job row is created due for its first poll; a poll claims it
// (next_poll_at moved to the claim's end, FOR UPDATE SKIP LOCKED: one process at a time), then either schedules the
// next poll or ends the job in the transaction that resolves its hold (./video-end.ts). Poll times are the
// database's clock, so processes never disagree about when a job is due or a claim has lapsed.

/** A completed job's video as its row keeps it: where it is fetched from, and the seconds the provider reported. */
export type StoredVideo = VideoLocation & { duration: number | null };

export interface VideoJobRow {
  id: string;
  userId: string;
  keyId: string | null;
  requestId: string;
  publicModel: string;
  provider: string;
  upstreamModel: string;
  upstreamJobId: string;
  fallbackPath: string[];
  status: VideoJobStatus;
  holdId: string;
  held: bigint;
  seconds: number;
  n: number;
  rate: { num: bigint; den: bigint };
  charged: bigint | null;
  videos: StoredVideo[] | null;
  errorCode: string | null;
  receivedAt: Date;
  createdAt: Date;
  updatedAt: Date;
  endedAt: Date | null;
  deadline: Date;
}

const COLUMNS = `id, user_id, key_id, request_id, public_model, provider, upstream_model, upstream_job_id, fallback_path,
  status, hold_id, held::text, seconds::text, n, rate_num::text, rate_den::text, charged::text, videos, error_code,
  received_at, created_at, updated_at, ended_at, deadline`;

interface Row {
  id: string;
  user_id: string;
  key_id: string | null;
  request_id: string;
  public_model: string;
  provider: string;
  upstream_model: string;
  upstream_job_id: string;
  fallback_path: string[];
  status: VideoJobStatus;
  hold_id: string;
  held: string;
  seconds: string;
  n: number;
  rate_num: string;
  rate_den: string;
  charged: string | null;
  videos: StoredVideo[] | null;
  error_code: string | null;
  received_at: Date;
  created_at: Date;
  updated_at: Date;
  ended_at: Date | null;
  deadline: Date;
}

const fromRow = (r: Row): VideoJobRow => ({
  id: r.id,
  userId: r.user_id,
  keyId: r.key_id,
  requestId: r.request_id,
  publicModel: r.public_model,
  provider: r.provider,
  upstreamModel: r.upstream_model,
  upstreamJobId: r.upstream_job_id,
  fallbackPath: r.fallback_path,
  status: r.status,
  holdId: r.hold_id,
  held: BigInt(r.held),
  seconds: Number(r.seconds),
  n: r.n,
  rate: { num: BigInt(r.rate_num), den: BigInt(r.rate_den) },
  charged: r.charged === null ? null : BigInt(r.charged),
  videos: r.videos,
  errorCode: r.error_code,
  receivedAt: r.received_at,
  createdAt: r.created_at,
  updatedAt: r.updated_at,
  endedAt: r.ended_at,
  deadline: r.deadline,
});

/**
 * The row of an accepted job, due for its first poll `firstPollSeconds` from now: any serving process polls it.
 * Storing it again (a retry whose first attempt committed) changes nothing.
 */
export async function insertVideoJob(pool: Pool, job: VideoJobRow, firstPollSeconds: number): Promise<void> {
  await pool.query(
    `insert into video_jobs (id, user_id, key_id, request_id, public_model, provider, upstream_model, upstream_job_id,
       fallback_path, status, hold_id, held, seconds, n, rate_num, rate_den, received_at, created_at, updated_at, deadline, next_poll_at)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $18, $19, now() + make_interval(secs => $20))
     on conflict (id) do nothing`,
    [
      job.id,
      job.userId,
      job.keyId,
      job.requestId,
      job.publicModel,
      job.provider,
      job.upstreamModel,
      job.upstreamJobId,
      job.fallbackPath,
      job.status,
      job.holdId,
      job.held.toString(),
      String(job.seconds),
      job.n,
      job.rate.num.toString(),
      job.rate.den.toString(),
      job.receivedAt,
      job.createdAt,
      job.deadline,
      firstPollSeconds,
    ],
  );
}

/** A job by id; with `userId`, only that user's (another user's job reads as absent). */
export async function findVideoJob(pool: Pool, id: string, userId?: string): Promise<VideoJobRow | null> {
  const { rows } = await pool.query<Row>(
    `select ${COLUMNS} from video_jobs where id = $1 ${userId === undefined ? "" : "and user_id = $2"}`,
    userId === undefined ? [id] : [id, userId],
  );
  return rows[0] ? fromRow(rows[0]) : null;
}

/** A running job claimed for one poll: `claim` is the token that lets this poll, and only it, schedule the next. */
export interface ClaimedVideoJob extends VideoJobRow {
  claim: string;
}

// Due running jobs, oldest due first, each locked or skipped (another process is claiming it this instant) and
// moved to the claim's end in the same statement: a job is claimed by one process until its claim lapses.
const CLAIM = `
with due as (
  select id from video_jobs
  where status in ('queued', 'in_progress') and next_poll_at <= now()
  order by next_poll_at
  limit $1::int
  for update skip locked
)
update video_jobs set next_poll_at = now() + make_interval(secs => $2::int), poll_claim = $3::uuid
where id in (select id from due)
returning ${COLUMNS}`;

/** Claims at most `batch` due jobs for `claimSeconds`, all under the token `claim`. */
export async function claimDueVideoJobs(pool: Pool, batch: number, claimSeconds: number, claim: string): Promise<ClaimedVideoJob[]> {
  const { rows } = await pool.query<Row>(CLAIM, [batch, claimSeconds, claim]);
  return rows.map((r) => Object.assign(fromRow(r), { claim }));
}

// Only under the poll's own claim: a poll that overran its claim (another process has the job now) changes nothing.
// updated_at is the last status change.
const NEXT_POLL = `
update video_jobs
set status = coalesce($3::text, status), updated_at = case when $3::text <> status then $4::timestamptz else updated_at end,
  next_poll_at = now() + make_interval(secs => $5::int), poll_claim = null
where id = $1::uuid and poll_claim = $2::uuid and status in ('queued', 'in_progress')`;

/** Ends a poll of a running job: its status as the upstream said (null: no answer), and its next poll. */
export async function scheduleNextPoll(
  pool: Pool,
  job: ClaimedVideoJob,
  status: "queued" | "in_progress" | null,
  now: Date,
  intervalSeconds: number,
): Promise<void> {
  await pool.query(NEXT_POLL, [job.id, job.claim, status, now, intervalSeconds]);
}

/** Locks a job's row for the transaction that ends it; its status (undefined: no such job). */
export async function lockVideoJob(client: Queryable, id: string): Promise<VideoJobStatus | undefined> {
  const { rows } = await client.query<{ status: VideoJobStatus }>(`select status from video_jobs where id = $1 for update`, [id]);
  return rows[0]?.status;
}

export interface VideoJobEnd {
  status: "completed" | "failed";
  charged: bigint;
  videos: StoredVideo[] | null;
  errorCode: string | null;
  now: Date;
  /** The submission's request-log row, encoded (src/analytics/row-json.ts); null when it cannot be stored. */
  record: string | null;
}

/**
 * Ends a running job and writes its request-log row, in one statement: both or neither. Once ended, running it
 * again changes nothing (no second row: the row is written only by the statement that ended the job). Run on the
 * transaction that resolved the job's hold (./video-end.ts), so the three commit together. `logRows` is the
 * journal's insert (services.ts): the request log itself, or its outbox when the log lives apart.
 */
export async function endVideoJob(client: Queryable, id: string, end: VideoJobEnd, logRows: (param: string) => string): Promise<void> {
  await client.query(
    `with ended as (
       update video_jobs set status = $2, charged = $3, videos = $4, error_code = $5, updated_at = $6, ended_at = $6, poll_claim = null
       where id = $1 and status in ('queued', 'in_progress') returning id)
     ${logRows(`(select case when exists (select 1 from ended) then $7::json else '[]'::json end)`)}`,
    [
      id,
      end.status,
      end.charged.toString(),
      end.videos === null ? null : JSON.stringify(end.videos),
      end.errorCode,
      end.now,
      end.record === null ? "[]" : `[${end.record}]`,
    ],
  );
}
