import type { Dispatcher } from "undici";
import { classifyError, postToEndpoint, type Endpoint } from "./http.js";
import { readSse, type SseRules } from "./sse.js";
import type { CallOptions, JsonResult, StreamResult, UsageReport } from "./types.js";
import { UpstreamAnswerTooLargeError, UpstreamError } from "./types.js";
import type { UpstreamSignal } from "./upstream-abort.js";

// Every protocol answers a 2xx the same two ways: one JSON object, or an SSE body. Reading them lives here once;
// what differs per protocol (where usage sits, how a stream ends) is passed in.

/**
 * A 2xx JSON answer; anything but a JSON object is an invalid answer (bad gateway, may fall back). At most
 * `maxBytes` are read (the capability's `limits.upstream_answer_bytes`): past them the answer is refused with
 * UpstreamAnswerTooLargeError, final (no fallback).
 */
export async function readJsonResult(
  res: Dispatcher.ResponseData,
  signal: UpstreamSignal,
  usageOf: (body: Record<string, unknown>) => UsageReport | null,
  maxBytes: number,
): Promise<JsonResult> {
  // A declared length over the cap is refused before a byte of the body is read.
  const declared = res.headers["content-length"];
  if (typeof declared === "string" && Number(declared) > maxBytes) {
    discard(res.body);
    throw new UpstreamAnswerTooLargeError(maxBytes, res.statusCode);
  }
  let raw: string;
  try {
    raw = await readText(res.body, maxBytes, res.statusCode);
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

type Body = Dispatcher.ResponseData["body"];

const ignore = () => {};

/**
 * Destroying an undici body aborts its request: the connection is closed, so the upstream stops sending and
 * nothing more is read. undici then emits an abort error on the body, which is expected here.
 */
function discard(body: Body): void {
  body.on("error", ignore);
  body.destroy();
}

/**
 * The body's text (UTF-8, a leading BOM skipped as undici's text() does), counting bytes as chunks arrive: once
 * the count passes `maxBytes` the body is discarded and the rest never read, so no more than the cap is held.
 * Chunks are kept as they came and joined once at the end.
 */
function readText(body: Body, maxBytes: number, status: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let length = 0;
    body.on("data", (chunk: Buffer) => {
      length += chunk.length;
      if (length > maxBytes) {
        // A chunk already on its way after the refusal changes nothing.
        if (body.destroyed) return;
        discard(body);
        reject(new UpstreamAnswerTooLargeError(maxBytes, status));
        return;
      }
      chunks.push(chunk);
    });
    body.on("end", () => resolve(decode(chunks, length)));
    body.on("error", reject);
  });
}

function decode(chunks: Buffer[], length: number): string {
  const all = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
  const bom = all.length > 2 && all[0] === 0xef && all[1] === 0xbb && all[2] === 0xbf;
  return all.toString("utf8", bom ? 3 : 0);
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
  return stream
    ? readStreamResult(res, options.signal, read.rules)
    : readJsonResult(res, options.signal, read.usageOf, endpoint.maxAnswerBytes);
}
