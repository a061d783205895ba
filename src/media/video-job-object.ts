import { z } from "zod";
import { VIDEO_JOB_STATUSES } from "../providers/types.js";
import type { VideoJobRow } from "./video-jobs.js";

// The gateway's own video job object (docs/api.md, "Video"): never the upstream's id, provider, model or URLs.

export const videoJobObjectSchema = z.object({
  id: z.string().meta({ description: "The gateway's job id." }),
  object: z.literal("video.generation"),
  status: z.enum(VIDEO_JOB_STATUSES),
  model: z.string().meta({ description: "The public model ID the request named." }),
  created_at: z.int().meta({ description: "Unix seconds when the upstream accepted the job." }),
  completed_at: z.int().nullable().meta({ description: "Unix seconds when the job ended (completed or failed); null while it runs." }),
  n: z.int(),
  duration: z.number().meta({ description: "Seconds per video asked for (the request's, or the model's default)." }),
  quota_held: z.int().meta({ description: "Quota units held while the job runs." }),
  quota_charged: z.int().nullable().meta({ description: "Quota units charged once it ended (0 for a failed job); null while it runs." }),
  videos: z
    .array(
      z.object({
        url: z.string().meta({ description: "The gateway's address of the video: GET it with the same API key." }),
        duration: z.number().nullable().meta({ description: "Seconds produced, as the provider reported them (null: not reported)." }),
      }),
    )
    .meta({ description: "The videos of a completed job; empty otherwise." }),
  error: z
    .object({ code: z.string(), message: z.string() })
    .nullable()
    .meta({ description: "Why a failed job failed, in the gateway's words; null otherwise." }),
});

export type VideoJobObject = z.infer<typeof videoJobObjectSchema>;

const unix = (d: Date) => Math.floor(d.getTime() / 1000);

/** The path of a job's video `index`, served by GET /v1/video/generations/{id}/content/{index}. */
export const videoContentPath = (jobId: string, index: number) => `/v1/video/generations/${jobId}/content/${index}`;

const FAILURES: Record<string, string> = {
  upstream_timeout: "The video was not ready in time; nothing was charged.",
  upstream_unreachable: "The provider of this job could no longer be reached; nothing was charged.",
};

export function videoJobObject(job: VideoJobRow): VideoJobObject {
  const failed = job.status === "failed";
  const code = job.errorCode ?? "upstream_error";
  return {
    id: job.id,
    object: "video.generation",
    status: job.status,
    model: job.publicModel,
    created_at: unix(job.createdAt),
    completed_at: job.endedAt ? unix(job.endedAt) : null,
    n: job.n,
    duration: job.seconds,
    quota_held: Number(job.held),
    quota_charged: job.charged === null ? null : Number(job.charged),
    videos: (job.videos ?? []).map((v, i) => ({ url: videoContentPath(job.id, i), duration: v.duration })),
    error: failed ? { code, message: FAILURES[code] ?? "The provider could not generate the video; nothing was charged." } : null,
  };
}
