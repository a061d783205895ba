import { setTimeout as sleep } from "node:timers/promises";
import type { Pool } from "../../src/db/pool.js";
import type { GatewayCluster, GatewayProcess } from "./crash-cluster.js";

// Video jobs beside the crash tests' chat load (docs/api.md, "Video"): submissions to chosen processes, and the
// proof that every job a client was given (a 200) ends completed once, on whichever process polls it, with its
// durable hold posted once and one request-log row carrying the same charge.

export interface VideoSubmission {
  process: number;
  generation: number;
  startedAt: number;
  endedAt: number;
  /** 0: no answer (connection refused or cut). */
  status: number;
  requestId: string | null;
  jobId: string | null;
  errorCode?: string | null;
  error?: string;
}

/** Submits one job of `seconds` to `target`. */
export async function submitVideo(target: GatewayProcess, key: string, model: string, seconds: number): Promise<VideoSubmission> {
  const out: VideoSubmission = {
    process: target.index,
    generation: target.generation,
    startedAt: performance.now(),
    endedAt: 0,
    status: 0,
    requestId: null,
    jobId: null,
  };
  try {
    const res = await fetch(`${target.url}/v1/video/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model, prompt: "a lighthouse in a storm", duration: seconds }),
      signal: AbortSignal.timeout(30_000),
    });
    out.status = res.status;
    out.requestId = res.headers.get("x-request-id");
    const body = (await res.json()) as { id?: string; error?: { code?: string | null } };
    if (res.status === 200) out.jobId = body.id ?? null;
    else out.errorCode = body.error?.code ?? null;
  } catch (err) {
    out.error = err instanceof Error ? `${err.constructor.name}: ${err.message}` : String(err);
  } finally {
    out.endedAt = performance.now();
  }
  return out;
}

/** How `target` shows each submitted job to its user now: the answer's status and the job's (0 and why: no answer). */
export function jobsAsShownBy(
  target: GatewayProcess,
  key: string,
  submissions: VideoSubmission[],
): Promise<{ status: number; job: string | undefined }[]> {
  return Promise.all(
    submissions.map(async (s) => {
      try {
        const res = await fetch(`${target.url}/v1/video/generations/${s.jobId}`, { headers: { authorization: `Bearer ${key}` } });
        return { status: res.status, job: ((await res.json()) as { status?: string }).status };
      } catch (err) {
        return { status: 0, job: err instanceof Error ? err.message : String(err) };
      }
    }),
  );
}

export interface VideoLoad {
  submissions: VideoSubmission[];
  /** Submits `count` jobs to process `index` at once and waits for their answers (they count as the load's). */
  submitTo(index: number, count: number): Promise<VideoSubmission[]>;
  /** Resolves once the loop's submission under way, if any, is answered. */
  idle(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * One submission every `everyMs` to the process `route(n)` picks for the n-th (undefined: skip that turn), until
 * stopped.
 */
export function startVideoLoad(opts: {
  cluster: GatewayCluster;
  key: string;
  model: string;
  seconds: number;
  everyMs: number;
  route: (n: number) => number | undefined;
}): VideoLoad {
  const submissions: VideoSubmission[] = [];
  const submit = async (index: number) => {
    const submitted = await submitVideo(opts.cluster.current[index]!, opts.key, opts.model, opts.seconds);
    submissions.push(submitted);
    return submitted;
  };
  let stopping = false;
  let underWay: Promise<unknown> = Promise.resolve();
  const running = (async () => {
    for (let n = 0; !stopping; n++) {
      const index = opts.route(n);
      if (index !== undefined) await (underWay = submit(index));
      await sleep(opts.everyMs);
    }
  })();
  return {
    submissions,
    submitTo: (index, count) => Promise.all(Array.from({ length: count }, () => submit(index))),
    idle: async () => void (await underWay),
    async stop() {
      stopping = true;
      await running;
    },
  };
}

export interface VideoJobRow {
  id: string;
  request_id: string;
  status: string;
  charged: string | null;
  /** The job's hold (by hold_id) and every hold of its reference `video:<id>`. */
  hold_status: string | null;
  hold_charged: string | null;
  holds: number;
  /** Its request-log rows. */
  logs: { status: number; quota_charged: string }[];
}

/** Every video job with its hold and its request-log rows. */
export async function readVideoJobs(pool: Pool): Promise<VideoJobRow[]> {
  const { rows } = await pool.query<VideoJobRow>(
    `select j.id::text, j.request_id, j.status, j.charged::text, h.status as hold_status, h.charged::text as hold_charged,
       (select count(*)::int from quota_holds x where x.request_id = 'video:' || j.id::text) as holds,
       (select coalesce(json_agg(json_build_object('status', r.status, 'quota_charged', r.quota_charged::text)), '[]')
          from request_logs r where r.request_id = j.request_id) as logs
     from video_jobs j left join quota_holds h on h.id = j.hold_id order by j.created_at`,
  );
  return rows;
}

/**
 * The jobs that did not end as they must: every job a submission was answered 200 for, completed, charged
 * `charge`, its hold posted once with that charge, one request-log row (200, that charge); and no job that no
 * client was given. Empty when all did.
 */
export function videoMismatches(submissions: VideoSubmission[], jobs: VideoJobRow[], charge: bigint): unknown[] {
  const given = new Map(submissions.filter((s) => s.status === 200).map((s) => [s.jobId!, s]));
  const wrong: unknown[] = [];
  for (const job of jobs) {
    const submission = given.get(job.id);
    const ok =
      submission !== undefined &&
      job.request_id === submission.requestId &&
      job.status === "completed" &&
      job.charged === String(charge) &&
      job.hold_status === "posted" &&
      job.hold_charged === String(charge) &&
      job.holds === 1 &&
      job.logs.length === 1 &&
      job.logs[0]!.status === 200 &&
      job.logs[0]!.quota_charged === String(charge);
    if (!ok) wrong.push({ job, submission });
    given.delete(job.id);
  }
  for (const missing of given.values()) wrong.push({ job: null, submission: missing });
  return wrong;
}
