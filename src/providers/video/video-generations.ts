import { getFromEndpoint, postToEndpoint, type Endpoint } from "../http.js";
import { readJsonResult } from "../read-result.js";
import type { CallOptions, VideoJobReport } from "../types.js";
import { readVideoJob } from "./read-video-job.js";

const noUsage = () => null;

/** POST {base_url}/video/generations: the body names the upstream model; the answer is the upstream job. */
export async function videoSubmit(endpoint: Endpoint, body: Record<string, unknown>, options: CallOptions): Promise<VideoJobReport> {
  const res = await postToEndpoint(endpoint, body, options, false);
  const answer = await readJsonResult(res, options.signal, noUsage, endpoint.maxAnswerBytes);
  return readVideoJob(answer.body, answer.status);
}

/** GET {base_url}/video/generations/{id}: the job's status, and its videos once completed. */
export async function videoStatus(endpoint: Endpoint, upstreamId: string, options: CallOptions): Promise<VideoJobReport> {
  const res = await getFromEndpoint(endpoint, options, `/${encodeURIComponent(upstreamId)}`);
  const answer = await readJsonResult(res, options.signal, noUsage, endpoint.maxAnswerBytes);
  return readVideoJob(answer.body, answer.status);
}
