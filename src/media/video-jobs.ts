import { insertRows } from "../analytics/row-json.js";
import type { Pool } from "../db/pool.js";
import type { VideoJobStatus } from "../providers/types.js";

// The video_jobs table's statements (./schema.ts). Each is one statement, so each is atomic on its own: a job
// row is created with its poll task, and ends (completed or failed) with the submission's request-log row.

export const POLL_VIDEO_TASK = "poll_video";

/** One pending poll per job, whichever process enqueued it (graphile-worker replaces a job under the same key). */
export const pollJobKey = (jobId: string) => `${POLL_VIDEO_TASK}:${jobId}`;

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
  videos: { url: string; duration: number | null }[] | null;
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
  videos: { url: string; duration: number | null }[] | null;
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

/** The row of an accepted job, and its first poll `firstPollAt`, in one statement: never a job nobody polls. */
export async function insertVideoJob(pool: Pool, job: VideoJobRow, firstPollAt: Date): Promise<void> {
  await pool.query(
    `with job as (
       insert into video_jobs (id, user_id, key_id, request_id, public_model, provider, upstream_model, upstream_job_id,
         fallback_path, status, hold_id, held, seconds, n, rate_num, rate_den, received_at, created_at, updated_at, deadline)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $18, $19)
       returning id)
     select graphile_worker.add_job($20, json_build_object('job_id', id), run_at := $21, job_key := $22) from job`,
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
      POLL_VIDEO_TASK,
      firstPollAt,
      pollJobKey(job.id),
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

/** Records a running job's new status (never once it has ended). */
export async function setVideoJobStatus(pool: Pool, id: string, status: "queued" | "in_progress", now: Date): Promise<void> {
  await pool.query(
    `update video_jobs set status = $2, updated_at = $3 where id = $1 and status in ('queued', 'in_progress') and status <> $2`,
    [id, status, now],
  );
}

export interface VideoJobEnd {
  status: "completed" | "failed";
  charged: bigint;
  videos: { url: string; duration: number | null }[] | null;
  errorCode: string | null;
  now: Date;
  /** The submission's request-log row, encoded (src/analytics/row-json.ts); null when it cannot be stored. */
  record: string | null;
}

/**
 * Ends a running job and writes its request-log row, in one statement: both or neither. Once ended, running it
 * again changes nothing (no second row: the row is written only by the statement that ended the job).
 */
export async function endVideoJob(pool: Pool, id: string, end: VideoJobEnd): Promise<void> {
  await pool.query(
    `with ended as (
       update video_jobs set status = $2, charged = $3, videos = $4, error_code = $5, updated_at = $6, ended_at = $6
       where id = $1 and status in ('queued', 'in_progress') returning id)
     ${insertRows(`(select case when exists (select 1 from ended) then $7::json else '[]'::json end)`)}`,
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
