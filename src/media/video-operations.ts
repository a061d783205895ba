import { METERED_ERROR_CODES } from "../metering/metered-errors.js";
import { ours, type OperationDescription } from "../server/api-description.js";
import { videoJobObjectSchema } from "./video-job-object.js";
import { videoRequestSchema } from "./video-request-schema.js";

// The video routes in the API description (docs/api.md, "Video").

const job = ours("VideoGeneration", videoJobObjectSchema);
const id = { id: "The gateway's job id (from the submission's answer)." };

export const videoOperations: OperationDescription[] = [
  {
    method: "post",
    path: "/v1/video/generations",
    operationId: "createVideoGeneration",
    summary: "Starts a video generation job; its quota is held until the job ends",
    tag: "Media",
    access: "apiKey",
    body: ours("VideoGenerationRequest", videoRequestSchema),
    ok: { status: 200, description: "The job, queued or in progress.", schema: job },
    errors: [...METERED_ERROR_CODES, "invalid_value", "internal_error"],
  },
  {
    method: "get",
    path: "/v1/video/generations/{id}",
    operationId: "getVideoGeneration",
    summary: "A video generation job of this key's user: its status, and its videos once completed",
    tag: "Media",
    access: "apiKey",
    pathParams: id,
    ok: { status: 200, description: "The job.", schema: job },
    errors: ["not_found"],
  },
  {
    method: "get",
    path: "/v1/video/generations/{id}/content/{index}",
    operationId: "getVideoGenerationContent",
    summary: "One video of a completed job, fetched from the provider by the gateway",
    tag: "Media",
    access: "apiKey",
    pathParams: Object.assign({ index: "The video's position in the job's `videos` (0 for the first)." }, id),
    ok: {
      status: 200,
      description: "The video's bytes (`video/mp4` unless the provider says another video type).",
      contentType: "video/mp4",
    },
    errors: ["not_found", "upstream_error"],
  },
];
