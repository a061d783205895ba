import { z } from "zod";
import { UpstreamError, VIDEO_JOB_STATUSES, type VideoJobReport } from "../types.js";

// The `video` protocol's job object (ours: no vendor publishes one; docs/mock-upstream.md, "Video"):
//   {id, status: queued | in_progress | completed | failed, videos?: [{url, duration?}], error?: {...}}
// Only what the gateway acts on is read; the error's text is never kept.

/** A produced length in seconds: a finite non-negative number, else it counts as not reported. */
const seconds = z.number().nonnegative().max(86_400).nullish().catch(null);

const videoJobSchema = z.looseObject({
  id: z.string().min(1).max(512),
  status: z.enum(VIDEO_JOB_STATUSES),
  videos: z
    .array(z.looseObject({ url: z.string().min(1).max(8192), duration: seconds }))
    .max(64)
    .optional(),
});

/** The job an answer describes; an answer that is not one (or a completed job without a video) is invalid. */
export function readVideoJob(body: Record<string, unknown>, status: number): VideoJobReport {
  const parsed = videoJobSchema.safeParse(body);
  if (!parsed.success) throw new UpstreamError("protocol", status);
  const job = parsed.data;
  const videos = job.status === "completed" ? (job.videos ?? []).map((v) => ({ url: v.url, durationSeconds: v.duration ?? null })) : [];
  if (job.status === "completed" && videos.length === 0) throw new UpstreamError("protocol", status);
  return { id: job.id, status: job.status, videos };
}
