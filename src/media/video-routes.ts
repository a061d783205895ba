import { isUuid } from "../ids.js";
import { errors } from "../errors.js";
import type { SafeDownloader } from "../providers/safe-download.js";
import { readUpstreamKey } from "../metering/upstream-key.js";
import { readJsonBody, validate } from "../server/body.js";
import type { DatabaseHealth } from "../db/health.js";
import { METERED_ERROR_CODES } from "../metering/metered-errors.js";
import { bodyModel, namedModel } from "../metering/request-row.js";
import { ours } from "../openapi/operation.js";
import { standardHeaders } from "../server/request-context.js";
import { route } from "../server/route.js";
import { openVideo } from "./video-content.js";
import { videoJobObjectSchema } from "./video-job-object.js";
import { videoJobObject } from "./video-job-object.js";
import { findVideoJob } from "./video-jobs.js";
import { VIDEO_ROUTE } from "./video-request-row.js";
import { videoRequestSchema, type VideoRequest } from "./video-request-schema.js";
import { submitVideo, type VideoDeps } from "./video-submit.js";

// POST /v1/video/generations and GET /v1/video/generations/{id} (docs/api.md, "Video"). API-key auth is mounted
// on /v1/* by the app; a job is readable only by its owner (any key of the same user).

const FIELDS = new Set(Object.keys(videoRequestSchema.shape));

/** The body checked field by field; an unknown field is a 400 naming it (provider settings go in provider_options). */
export function parseVideoRequest(value: unknown): VideoRequest {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) {
    const unknown = Object.keys(value).find((name) => !FIELDS.has(name));
    if (unknown !== undefined) {
      throw errors.badRequest(`Unknown field ${unknown}: provider-specific settings go in provider_options.`, unknown, "invalid_value");
    }
  }
  return validate(videoRequestSchema, value);
}

export interface VideoRouteDeps extends Omit<VideoDeps, "onFault"> {
  bodyLimit: number;
  /** Fetches a `video`-protocol job's link for the content route (SSRF-checked, capped by media.download.max_bytes). */
  download: SafeDownloader;
  /** Hears of the database faults a submission met. */
  health: DatabaseHealth;
}

const jobRef = ours("VideoGeneration", videoJobObjectSchema);
const idParam = { id: "The gateway's job id (from the submission's answer)." };

/** The user's job; another user's reads exactly as a job that does not exist: no oracle of ids. */
async function ownJob(deps: VideoRouteDeps, id: string, userId: string) {
  const job = isUuid(id) ? await findVideoJob(deps.pool, id, userId) : null;
  if (!job) throw errors.notFound(`No video generation job '${id}' for this account.`);
  return job;
}

const submit = route<VideoRouteDeps>(
  {
    method: "post",
    path: "/v1/video/generations",
    operationId: "createVideoGeneration",
    summary: "Starts a video generation job; its quota is held until the job ends",
    tag: "Media",
    access: "apiKey",
    body: ours("VideoGenerationRequest", videoRequestSchema),
    ok: { status: 200, description: "The job, queued or in progress.", schema: jobRef },
    errors: [...METERED_ERROR_CODES, "invalid_value", "internal_error"],
  },
  (deps) => {
    const video: VideoDeps & { bodyLimit: number } = Object.assign(
      { onFault: (err: unknown) => deps.health.failed(err, "video submission") },
      deps,
    );
    return async (c) => {
      const receivedAt = video.clock.now();
      const key = c.get("apiKey");
      const start = {
        requestId: c.get("requestId"),
        route: VIDEO_ROUTE,
        clientProtocol: "openai",
        key,
        modelId: "",
        startedAt: performance.now(),
        streamed: false,
      };
      c.set("metered", start);
      let request: VideoRequest;
      let value: unknown;
      try {
        // A job is polled later, by any process: a client's own upstream key would have to be stored for that.
        if (readUpstreamKey(c) !== undefined) {
          throw errors.badRequest(
            "Video jobs do not take a client's own upstream key; send the request without it.",
            null,
            "upstream_key_not_accepted",
          );
        }
        ({ value } = await readJsonBody(c, video.bodyLimit));
        request = parseVideoRequest(value);
        start.modelId = request.model;
      } catch (err) {
        if (start.modelId === "") start.modelId = namedModel(bodyModel(value));
        video.metering.logRejected(start, err);
        throw err;
      }
      const job = await submitVideo(video, start, key, request, receivedAt);
      return c.json(videoJobObject(job));
    };
  },
);

const read = route<VideoRouteDeps>(
  {
    method: "get",
    path: "/v1/video/generations/{id}",
    operationId: "getVideoGeneration",
    summary: "A video generation job of this key's user: its status, and its videos once completed",
    tag: "Media",
    access: "apiKey",
    pathParams: idParam,
    ok: { status: 200, description: "The job.", schema: jobRef },
    errors: ["not_found"],
  },
  (deps) => async (c) => {
    const job = await ownJob(deps, c.req.param("id")!, c.get("apiKey").userId);
    return c.json(videoJobObject(job));
  },
);

/**
 * The video itself, streamed from its upstream as it arrives (./video-content.ts): a link (never shown to the
 * client) through the SSRF-checked downloader, or the provider's own content endpoint with its key.
 */
const content = route<VideoRouteDeps>(
  {
    method: "get",
    path: "/v1/video/generations/{id}/content/{index}",
    operationId: "getVideoGenerationContent",
    summary: "One video of a completed job, fetched from the provider by the gateway",
    tag: "Media",
    access: "apiKey",
    pathParams: Object.assign({ index: "The video's position in the job's `videos` (0 for the first)." }, idParam),
    ok: {
      status: 200,
      description: "The video's bytes, typed by what they are (`video/mp4`, `video/webm` or `video/quicktime`).",
      contentType: "video/mp4",
    },
    errors: ["not_found", "video_expired", "upstream_error", "upstream_answer_too_large"],
  },
  (deps) => async (c) => {
    const id = c.req.param("id")!;
    const index = c.req.param("index")!;
    const job = await ownJob(deps, id, c.get("apiKey").userId);
    const video = /^\d{1,2}$/.test(index) ? job.videos?.[Number(index)] : undefined;
    if (!video)
      throw errors.notFound(`The job '${id}' has no video ${index}${job.status === "completed" ? "" : " (it has not completed)"}.`);
    const { contentType, body } = await openVideo(deps, job, video, c.get("logger"));
    return new Response(body, {
      status: 200,
      headers: Object.assign(standardHeaders(c.get("requestId")), { "content-type": contentType }),
    });
  },
);

/** Submission, the job, and its videos; a job is readable only by its owner (any key of the same user). */
export const videoRoutes = [submit, read, content];
