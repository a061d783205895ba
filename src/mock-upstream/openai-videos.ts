import { createHash, randomBytes } from "node:crypto";
import type { Context } from "hono";
import { Hono } from "hono";
import { z } from "zod";
import type { MockUpstreamEnv } from "./context.js";
import { checkBody, openai, openaiError } from "./dialects.js";
import { MOCK_IMAGES } from "./mock-images.js";

/**
 * OpenAI's video API (shared/reference/openai/openapi.yaml, `/videos`; docs/mock-upstream.md, "OpenAI videos"):
 * `POST /v1/videos` (JSON `CreateVideoJsonBody` or multipart, as the SDK sends it) starts a job, queued; each
 * `GET /v1/videos/{id}` moves it one step: in_progress, then completed (or failed), so a test drives it by
 * polling, never by waiting. `GET /v1/videos/{id}/content` (with the key) serves the MP4, or a WebP for
 * `variant=thumbnail|spritesheet`. Faults, by `x-mock-video` on the creation or a marker in the prompt:
 * `fail` / `[mock:fail]` ends the job failed, `never` / `[mock:never]` keeps it in progress for ever,
 * `not-video` / `[mock:not-video]` serves an HTML page as its content, `gone` / `[mock:gone]` answers its
 * content 404 as an expired asset does.
 */

const SECONDS = ["4", "8", "12"] as const;
const SIZES = ["720x1280", "1280x720", "1024x1792", "1792x1024"] as const;
const VARIANTS = ["video", "thumbnail", "spritesheet"] as const;
const FAULTS = ["fail", "never", "not-video", "gone"] as const;
type Fault = (typeof FAULTS)[number];

const listed = (values: readonly string[]) => values.map((v) => `'${v}'`).join(", ");
const oneOf = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.enum(values, { error: (issue) => `Invalid value: '${String(issue.input)}'. Supported values are: ${listed(values)}.` });

/** `ImageRefParam`: exactly one of a URL (http(s) or a base64 data URL) and a file ID. */
const imageRef = z
  .strictObject({
    image_url: z
      .string()
      .max(20_971_520)
      .regex(/^(https?:\/\/\S+|data:image\/[\w.+-]+;base64,[A-Za-z0-9+/]+={0,2})$/, { error: "Expected a URL or a base64 data URL." })
      .optional(),
    file_id: z.string().min(1).optional(),
  })
  .refine((ref) => (ref.image_url === undefined) !== (ref.file_id === undefined), {
    error: "Provide exactly one of image_url or file_id.",
  });

/** `CreateVideoJsonBody`; an unknown parameter is refused, as OpenAI does. */
const createRequest = z.strictObject({
  model: z.string().min(1).optional(),
  prompt: z.string({ error: "Missing required parameter: 'prompt'." }).min(1).max(32_000),
  input_reference: z.union([imageRef, z.instanceof(File)]).optional(),
  seconds: oneOf(SECONDS).optional(),
  size: oneOf(SIZES).optional(),
});
type CreateRequest = z.output<typeof createRequest>;

interface MockVideo {
  model: string;
  prompt: string;
  seconds: string;
  size: string;
  createdAt: number;
  completedAt: number | null;
  polls: number;
  fault: Fault | null;
}

/** Jobs of this process, oldest first; bounded, as a long-running mock must not grow for ever. */
const videos = new Map<string, MockVideo>();
const MAX_VIDEOS = 10_000;
/** How long a completed video's assets are kept, as `expires_at` says. */
const KEPT_SECONDS = 3600;

function statusOf(video: MockVideo): "queued" | "in_progress" | "completed" | "failed" {
  if (video.polls === 0) return "queued";
  if (video.polls === 1 || video.fault === "never") return "in_progress";
  return video.fault === "fail" ? "failed" : "completed";
}

/** A `VideoResource`, every required field present. */
function resource(id: string, video: MockVideo) {
  const status = statusOf(video);
  const ended = status === "completed" || status === "failed";
  if (ended) video.completedAt ??= Math.floor(Date.now() / 1000);
  const progress = status === "queued" ? 0 : status === "in_progress" ? Math.min(99, 40 + 10 * video.polls) : 100;
  return {
    id,
    object: "video" as const,
    model: video.model,
    status,
    progress,
    created_at: video.createdAt,
    completed_at: ended ? video.completedAt : null,
    expires_at: status === "completed" ? video.completedAt! + KEPT_SECONDS : null,
    prompt: video.prompt,
    size: video.size,
    seconds: video.seconds,
    remixed_from_video_id: null,
    error: status === "failed" ? { code: "video_generation_failed", message: "Mock upstream: the video could not be generated." } : null,
  };
}

/**
 * The video's MP4: an `ftyp` box (what sniffers look for) and an `mdat` box of 96 KiB derived from the job's id,
 * so each job's bytes are its own and take several reads to arrive.
 */
export function mockVideoBytes(id: string): Buffer {
  const ftyp = Buffer.from("000000186674797069736f6d0000020069736f6d69736f32", "hex");
  const data = Buffer.alloc(96 * 1024);
  for (let offset = 0, block = 0; offset < data.length; offset += 32, block++) {
    createHash("sha256").update(`${id}:${block}`).digest().copy(data, offset);
  }
  const header = Buffer.alloc(8);
  header.writeUInt32BE(data.length + 8);
  header.write("mdat", 4, "latin1");
  return Buffer.concat([ftyp, header, data]);
}

/** A multipart form as the JSON body it stands for: `input_reference[image_url]` is the object's field. */
function formAsCreate(form: Record<string, string | File | (string | File)[]>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(form)) {
    const nested = /^input_reference\[(\w+)\]$/.exec(key);
    if (nested) out.input_reference = Object.assign((out.input_reference as object | undefined) ?? {}, { [nested[1]!]: value });
    else out[key] = value;
  }
  return out;
}

async function createBody(c: Context<MockUpstreamEnv>): Promise<CreateRequest | Response> {
  const multipart = c.req.header("content-type")?.startsWith("multipart/form-data") ?? false;
  const body: unknown = multipart
    ? await c.req.parseBody({ all: true }).then(formAsCreate, () => undefined)
    : await c.req.json().catch(() => undefined);
  if (body === undefined) return openai.error(c, 400, "We could not parse the body of your request.", { code: "invalid_json" });
  if (typeof body === "object" && body !== null && !Array.isArray(body)) {
    const unknown = Object.keys(body).find((k) => !(k in createRequest.shape));
    if (unknown !== undefined)
      return openai.error(c, 400, `Unknown parameter: '${unknown}'.`, { param: unknown, code: "unknown_parameter" });
  }
  return checkBody(c, openai, createRequest, body);
}

function faultOf(c: Context<MockUpstreamEnv>, prompt: string): Fault | null {
  const header = c.req.header("x-mock-video")?.trim().toLowerCase();
  return FAULTS.find((f) => f === header || prompt.includes(`[mock:${f}]`)) ?? null;
}

function notFound(c: Context<MockUpstreamEnv>, id: string): Response {
  return openaiError(c, 404, `Video with id '${id}' not found.`, { code: "video_not_found", param: "video_id" });
}

export const openaiVideosRoute = new Hono<MockUpstreamEnv>()
  .post("/v1/videos", async (c) => {
    const req = await createBody(c);
    if (req instanceof Response) return req;
    const id = `video_${randomBytes(16).toString("hex")}`;
    const video: MockVideo = {
      model: req.model ?? "sora-2",
      prompt: req.prompt,
      seconds: req.seconds ?? "4",
      size: req.size ?? "720x1280",
      createdAt: Math.floor(Date.now() / 1000),
      completedAt: null,
      polls: 0,
      fault: faultOf(c, req.prompt),
    };
    if (videos.size >= MAX_VIDEOS) videos.delete(videos.keys().next().value!);
    videos.set(id, video);
    return c.json(resource(id, video));
  })
  .get("/v1/videos/:id", (c) => {
    const id = c.req.param("id");
    const video = videos.get(id);
    if (!video) return notFound(c, id);
    video.polls += 1;
    return c.json(resource(id, video));
  })
  .get("/v1/videos/:id/content", (c) => {
    const id = c.req.param("id");
    const video = videos.get(id);
    if (!video) return notFound(c, id);
    const variant = c.req.query("variant") ?? "video";
    if (!(VARIANTS as readonly string[]).includes(variant)) {
      return openaiError(c, 400, `Invalid value: '${variant}'. Supported values are: ${listed(VARIANTS)}.`, {
        param: "variant",
        code: "invalid_value",
      });
    }
    const status = statusOf(video);
    if (status !== "completed") return openaiError(c, 400, `Video is not ready: its status is '${status}'.`, { param: "video_id" });
    if (video.fault === "gone") return openaiError(c, 404, "The video's assets have expired.", { code: "video_expired" });
    if (video.fault === "not-video") return c.html("<!doctype html><title>Mock upstream</title><p>Not a video.</p>");
    if (variant !== "video") return c.body(new Uint8Array(MOCK_IMAGES.webp), 200, { "content-type": "image/webp" });
    return c.body(new Uint8Array(mockVideoBytes(id)), 200, { "content-type": "video/mp4" });
  });
