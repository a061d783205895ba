import type { Dispatcher } from "undici";
import { classifyError, postToEndpoint, type Endpoint } from "./http.js";
import { readSse, type SseRules } from "./sse.js";
import type { CallOptions, JsonResult, StreamResult, UsageReport } from "./types.js";
import { UpstreamAnswerTooLargeError, UpstreamError } from "./types.js";
import type { UpstreamSignal } from "./upstream-abort.js";

// Every protocol answers a 2xx the same two ways: one JSON object, or an SSE body. Reading them lives here once;
// what differs per protocol (where usage sits, how a stream ends) is passed in.

/** How an answer's bytes become its parse and its text: the parse is of `raw`, unless the reader says otherwise. */
export type JsonParse = (bytes: Buffer) => { body: unknown; raw: string };

/** The whole answer decoded as UTF-8 and parsed. */
export const parseJson: JsonParse = (bytes) => {
  const raw = bytes.toString("utf8");
  return { body: JSON.parse(raw), raw };
};

/**
 * A 2xx JSON answer; anything but a JSON object is an invalid answer (bad gateway, may fall back). At most
 * `maxBytes` are read (the capability's `limits.upstream_answer_bytes`): past them the answer is refused with
 * UpstreamAnswerTooLargeError, final (no fallback). `parse` throws on anything that is not JSON.
 */
export async function readJsonResult(
  res: Dispatcher.ResponseData,
  signal: UpstreamSignal,
  usageOf: (body: Record<string, unknown>) => UsageReport | null,
  maxBytes: number,
  parse: JsonParse = parseJson,
): Promise<JsonResult> {
  // A declared length over the cap is refused before a byte of the body is read.
  const declared = res.headers["content-length"];
  if (typeof declared === "string" && Number(declared) > maxBytes) {
    discard(res.body);
    throw new UpstreamAnswerTooLargeError(maxBytes, res.statusCode);
  }
  let bytes: Buffer;
  try {
    bytes = await readBytes(res.body, maxBytes, res.statusCode);
  } catch (err) {
    throw classifyError(err, signal);
  }
  let parsed: { body: unknown; raw: string };
  try {
    parsed = parse(bytes);
  } catch {
    throw new UpstreamError("protocol", res.statusCode);
  }
  const { body, raw } = parsed;
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw new UpstreamError("protocol", res.statusCode);
  return {
    kind: "json",
    status: res.statusCode,
    body: body as Record<string, unknown>,
    raw,
    usage: usageOf(body as Record<string, unknown>),
  };
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
 * The body's bytes (a leading UTF-8 BOM skipped as undici's text() does), counting bytes as chunks arrive: once
 * the count passes `maxBytes` the body is discarded and the rest never read, so no more than the cap is held.
 * Chunks are kept as they came and joined once at the end.
 */
function readBytes(body: Body, maxBytes: number, status: number): Promise<Buffer> {
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
    body.on("end", () => resolve(withoutBom(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length))));
    body.on("error", reject);
  });
}

function withoutBom(all: Buffer): Buffer {
  const bom = all.length > 2 && all[0] === 0xef && all[1] === 0xbb && all[2] === 0xbf;
  return bom ? all.subarray(3) : all;
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
  read: { rules?: SseRules; usageOf: (body: Record<string, unknown>) => UsageReport | null; parse?: JsonParse },
): Promise<JsonResult | StreamResult> {
  const stream = body.stream === true;
  const res = await postToEndpoint(endpoint, body, options, stream);
  return stream
    ? readStreamResult(res, options.signal, read.rules)
    : readJsonResult(res, options.signal, read.usageOf, endpoint.maxAnswerBytes, read.parse);
}
