import {
  controlResponseSchema,
  snapshotResponseSchema,
  type ControlRequest,
  type ControlResponse,
  type SnapshotRequest,
  type SnapshotResponse,
} from "../wire/chat-platform.js";
import {
  claimResponseSchema,
  completeResponseSchema,
  failResponseSchema,
  type ClaimedJob,
  type ClaimRequest,
  type CompleteRequest,
  type CompleteResponse,
  type FailRequest,
  type FailResponse,
} from "../wire/support.js";
import { createHttpCaller, type HttpOptions } from "./http.js";

// The support workers' endpoints (docs/support.md, "Jobs"): the bot token on every call, the lease token in the
// bodies of complete and fail. Types and answer checks come from worker-kit/wire/support.ts, the module the routes
// validate with.

export interface WorkerClientOptions extends Omit<HttpOptions, "baseUrl"> {
  /** The gateway's root; default `$GATEWAY_URL`, else http://127.0.0.1:8080. */
  baseUrl?: string | undefined;
  /** SUPPORT_BOT_TOKEN of the gateway; default `$SUPPORT_BOT_TOKEN`. */
  botToken?: string | undefined;
}

/** Where a worker reaches the gateway when neither the options nor `$GATEWAY_URL` say. */
export const DEFAULT_GATEWAY_URL = "http://127.0.0.1:8080";

export interface WorkerClient {
  claim(request: ClaimRequest, signal?: AbortSignal): Promise<ClaimedJob[]>;
  complete(jobId: string, request: CompleteRequest, signal?: AbortSignal): Promise<CompleteResponse>;
  fail(jobId: string, request: FailRequest, signal?: AbortSignal): Promise<FailResponse>;
  /** The chat platform's check before it delivers an automatic answer to a channel. */
  control(request: ControlRequest, signal?: AbortSignal): Promise<ControlResponse>;
  /** The chat platform's snapshot of a channel (creates or updates its case). */
  snapshot(request: SnapshotRequest, signal?: AbortSignal): Promise<SnapshotResponse>;
}

const ROOT = "/api/v1/internal/support/assistant";

// The two settings fall back to the environment here, in the package, so that a worker compiled without Node's
// types (a default `tsc --init` has `types: []`, no `process`) needs no settings in its own code.
export function createWorkerClient(options: WorkerClientOptions = {}): WorkerClient {
  const botToken = options.botToken ?? process.env.SUPPORT_BOT_TOKEN;
  if (!botToken) throw new RangeError("botToken: not given, and SUPPORT_BOT_TOKEN is not set");
  const call = createHttpCaller({ ...options, baseUrl: options.baseUrl ?? process.env.GATEWAY_URL ?? DEFAULT_GATEWAY_URL });
  const headers = { authorization: `Bearer ${botToken}` };
  const job = (id: string, action: string) => `${ROOT}/jobs/${encodeURIComponent(id)}/${action}`;
  return {
    async claim(body, signal) {
      const answer = await call({ method: "POST", path: `${ROOT}/jobs/claim`, headers, body, answer: claimResponseSchema, signal });
      return answer.data.jobs;
    },
    async complete(jobId, body, signal) {
      return (await call({ method: "POST", path: job(jobId, "complete"), headers, body, answer: completeResponseSchema, signal })).data;
    },
    async fail(jobId, body, signal) {
      return (await call({ method: "POST", path: job(jobId, "fail"), headers, body, answer: failResponseSchema, signal })).data;
    },
    async control(body, signal) {
      return (
        await call({ method: "POST", path: `${ROOT}/cases/chatplatform/control`, headers, body, answer: controlResponseSchema, signal })
      ).data;
    },
    async snapshot(body, signal) {
      return (await call({ method: "POST", path: `${ROOT}/cases/chatplatform`, headers, body, answer: snapshotResponseSchema, signal }))
        .data;
    },
  };
}
