import { randomBytes } from "node:crypto";
import { Hono } from "hono";
import { z } from "zod";
import type { MockUpstreamEnv } from "./context.js";
import { openai, parseBody } from "./dialects.js";

/**
 * The `video` protocol (docs/mock-upstream.md, "Video"): `POST /v1/video/generations` starts a job (queued);
 * each `GET /v1/video/generations/{id}` moves it one step: in_progress, then completed (or failed), so a test
 * drives it by polling, never by waiting. The videos are a few bytes of MP4 served at `GET /mock-videos/…`.
 * Faults: `x-mock-video: fail` (or `[mock:fail]` in the prompt) ends the job failed; `x-mock-video: no-duration`
 * reports videos without their length.
 */

export const MOCK_VIDEOS_PATH = "/mock-videos";

const request = z.looseObject({
  model: z.string().min(1),
  prompt: z.union([z.string().min(1), z.looseObject({ text: z.string().min(1) })]),
  duration: z.number().positive().optional(),
  n: z.int().min(1).max(16).optional(),
});

interface MockJob {
  model: string;
  createdAt: number;
  polls: number;
  fail: boolean;
  reportDuration: boolean;
  n: number;
  duration: number;
}

/** Jobs of this process, oldest first; bounded, as a long-running mock must not grow for ever. */
const jobs = new Map<string, MockJob>();
const MAX_JOBS = 10_000;

/** A minimal MP4: an `ftyp` box (isom), which is what file-type sniffers look for. */
const MP4 = Buffer.from("000000186674797069736f6d0000020069736f6d69736f32", "hex");

function jobObject(id: string, job: MockJob, origin: string) {
  const status = job.polls === 0 ? "queued" : job.polls === 1 ? "in_progress" : job.fail ? "failed" : "completed";
  return {
    id,
    object: "video.generation",
    model: job.model,
    status,
    created_at: job.createdAt,
    ...(status === "completed"
      ? {
          videos: Array.from({ length: job.n }, (_, i) => ({
            url: `${origin}${MOCK_VIDEOS_PATH}/${id}-${i}.mp4`,
            ...(job.reportDuration ? { duration: job.duration } : {}),
          })),
        }
      : {}),
    ...(status === "failed" ? { error: { code: "generation_failed", message: "Mock upstream: the video could not be generated." } } : {}),
  };
}

export const videoRoute = new Hono<MockUpstreamEnv>()
  .post("/v1/video/generations", async (c) => {
    const req = await parseBody(c, openai, request);
    if (req instanceof Response) return req;
    const fault = c.req.header("x-mock-video")?.trim().toLowerCase();
    const text = typeof req.prompt === "string" ? req.prompt : req.prompt.text;
    const id = `vid_${randomBytes(12).toString("hex")}`;
    const job: MockJob = {
      model: req.model,
      createdAt: Math.floor(Date.now() / 1000),
      polls: 0,
      fail: fault === "fail" || text.includes("[mock:fail]"),
      reportDuration: fault !== "no-duration",
      n: req.n ?? 1,
      duration: req.duration ?? 5,
    };
    if (jobs.size >= MAX_JOBS) jobs.delete(jobs.keys().next().value!);
    jobs.set(id, job);
    return c.json(jobObject(id, job, new URL(c.req.url).origin));
  })
  .get("/v1/video/generations/:id", (c) => {
    const id = c.req.param("id");
    const job = jobs.get(id);
    if (!job) return openai.error(c, 404, `No video generation job '${id}'.`, { code: "not_found" });
    job.polls += 1;
    return c.json(jobObject(id, job, new URL(c.req.url).origin));
  })
  // Served without a key (./app.ts), as a provider's signed links are.
  .get(`${MOCK_VIDEOS_PATH}/:name`, (c) => {
    const name = /^(vid_[0-9a-f]{24})-\d+\.mp4$/.exec(c.req.param("name"));
    if (!name || !jobs.has(name[1]!)) return openai.error(c, 404, "No such video.", { code: "not_found" });
    return c.body(new Uint8Array(MP4), 200, { "content-type": "video/mp4" });
  });
