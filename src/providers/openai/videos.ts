import type { Dispatcher } from "undici";
import { classifyError, getFromEndpoint, postToEndpoint, type Endpoint } from "../http.js";
import { readJsonResult } from "../read-result.js";
import { UpstreamAnswerTooLargeError, type ByteStream, type CallOptions, type VideoJobReport } from "../types.js";
import type { UpstreamSignal } from "../upstream-abort.js";
import { readVideoResource } from "./read-video-resource.js";

// OpenAI's video API (shared/reference/openai/openapi.yaml, `/videos`): a job is created with a JSON
// `CreateVideoJsonBody`, read back by its id, and its video downloaded from `/videos/{id}/content` with the key.

const noUsage = () => null;

/** POST {base_url}/videos, JSON: the body names the upstream model; the answer is the job (`VideoResource`). */
export async function openaiVideoSubmit(endpoint: Endpoint, body: Record<string, unknown>, options: CallOptions): Promise<VideoJobReport> {
  const res = await postToEndpoint(endpoint, body, options, false);
  const answer = await readJsonResult(res, options.signal, noUsage, endpoint.maxAnswerBytes);
  return readVideoResource(answer.body, answer.status);
}

/** GET {base_url}/videos/{id}: the job's status, and its length once completed. */
export async function openaiVideoStatus(endpoint: Endpoint, upstreamId: string, options: CallOptions): Promise<VideoJobReport> {
  const res = await getFromEndpoint(endpoint, options, `/${encodeURIComponent(upstreamId)}`);
  const answer = await readJsonResult(res, options.signal, noUsage, endpoint.maxAnswerBytes);
  return readVideoResource(answer.body, answer.status);
}

/**
 * GET {base_url}/videos/{id}/content (the MP4; no `variant`): the bytes as they arrive, never read whole. A
 * non-2xx (404 once the provider's assets expired) is an UpstreamError with its status, its body unread.
 */
export async function openaiVideoContent(
  endpoint: Endpoint,
  upstreamId: string,
  options: CallOptions,
  maxBytes: number,
): Promise<ByteStream> {
  const res = await getFromEndpoint(endpoint, options, `/${encodeURIComponent(upstreamId)}/content`);
  const declared = res.headers["content-length"];
  if (typeof declared === "string" && Number(declared) > maxBytes) {
    res.body.on("error", () => {});
    res.body.destroy();
    throw new UpstreamAnswerTooLargeError(maxBytes, res.statusCode);
  }
  const contentType = res.headers["content-type"];
  return { contentType: typeof contentType === "string" ? contentType : null, chunks: capped(res, maxBytes, options.signal) };
}

/** The body's chunks while they add up to at most `maxBytes`; leaving the loop destroys the body (the rest is never read). */
async function* capped(res: Dispatcher.ResponseData, maxBytes: number, signal: UpstreamSignal): AsyncGenerator<Buffer> {
  let length = 0;
  try {
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      length += chunk.length;
      if (length > maxBytes) throw new UpstreamAnswerTooLargeError(maxBytes, res.statusCode);
      yield chunk;
    }
  } catch (err) {
    throw classifyError(err, signal);
  }
}
