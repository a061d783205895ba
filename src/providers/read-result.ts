import type { Dispatcher } from "undici";
import { classifyError, postToEndpoint, type Endpoint } from "./http.js";
import { readSse, type SseRules } from "./sse.js";
import type { CallOptions, JsonResult, StreamResult, UsageReport } from "./types.js";
import { UpstreamError } from "./types.js";
import type { UpstreamSignal } from "./upstream-abort.js";

// Every protocol answers a 2xx the same two ways: one JSON object, or an SSE body. Reading them lives here once;
// what differs per protocol (where usage sits, how a stream ends) is passed in.

/** A 2xx JSON answer; anything but a JSON object is an invalid answer (bad gateway, may fall back). */
export async function readJsonResult(
  res: Dispatcher.ResponseData,
  signal: UpstreamSignal,
  usageOf: (body: Record<string, unknown>) => UsageReport | null,
): Promise<JsonResult> {
  let raw: string;
  try {
    raw = await res.body.text();
  } catch (err) {
    throw classifyError(err, signal);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new UpstreamError("protocol", res.statusCode);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new UpstreamError("protocol", res.statusCode);
  const body = parsed as Record<string, unknown>;
  return { kind: "json", status: res.statusCode, body, raw, usage: usageOf(body) };
}

/** A 2xx SSE answer, parsed as it is read; a body of another type is an invalid answer. */
export async function readStreamResult(res: Dispatcher.ResponseData, signal: UpstreamSignal, rules?: SseRules): Promise<StreamResult> {
  if (!String(res.headers["content-type"] ?? "").startsWith("text/event-stream")) {
    await res.body.dump().catch(() => {});
    throw new UpstreamError("protocol", res.statusCode);
  }
  return { kind: "stream", status: res.statusCode, batches: readSse(res.body, rules, signal) };
}

/** Posts `body` and reads the answer: SSE when the body asks for a stream (`stream: true`), else JSON. */
export async function postAndRead(
  endpoint: Endpoint,
  body: Record<string, unknown>,
  options: CallOptions,
  read: { rules?: SseRules; usageOf: (body: Record<string, unknown>) => UsageReport | null },
): Promise<JsonResult | StreamResult> {
  const stream = body.stream === true;
  const res = await postToEndpoint(endpoint, body, options, stream);
  return stream ? readStreamResult(res, options.signal, read.rules) : readJsonResult(res, options.signal, read.usageOf);
}
