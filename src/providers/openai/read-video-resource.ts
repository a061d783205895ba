import { z } from "zod";
import { UpstreamError, VIDEO_JOB_STATUSES, type VideoJobReport } from "../types.js";

// OpenAI's video job (`VideoResource` in shared/reference/openai/openapi.yaml): {id, object: "video", status:
// queued | in_progress | completed | failed, seconds: "4" | "8" | "12", error: {code, message} | null, …}. Only
// what the gateway acts on is read; the error's code and text are never kept (the job fails as `upstream_error`).

const resourceSchema = z.looseObject({
  id: z.string().min(1).max(512),
  status: z.enum(VIDEO_JOB_STATUSES),
  seconds: z.unknown().optional(),
});

/** The clip's length as `seconds` says it (a string of a number); anything else counts as not reported. */
function producedSeconds(value: unknown): number | null {
  if (typeof value !== "string" || !/^\d{1,5}(\.\d{1,3})?$/.test(value)) return null;
  const seconds = Number(value);
  return seconds <= 86_400 ? seconds : null;
}

/**
 * The job an answer describes; an answer that is not one is invalid. A completed job has one video, served by
 * the provider's content endpoint for the job (never a link), billed at the `seconds` it reports.
 */
export function readVideoResource(body: Record<string, unknown>, status: number): VideoJobReport {
  const parsed = resourceSchema.safeParse(body);
  if (!parsed.success) throw new UpstreamError("protocol", status);
  const job = parsed.data;
  const videos = job.status === "completed" ? [{ content: "provider" as const, durationSeconds: producedSeconds(job.seconds) }] : [];
  return { id: job.id, status: job.status, videos };
}
