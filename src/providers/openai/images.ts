import { CanonicalBase64 } from "../upstream-images/canonical-base64.js";
import { postToEndpoint, type Endpoint } from "../http.js";
import { asString } from "../json-guards.js";
import { parseJson, postAndRead, readJsonResult, type JsonParse } from "../read-result.js";
import type { SseRules } from "../sse.js";
import type { CallOptions, JsonResult, StreamResult } from "../types.js";
import { convertResponsesUsage } from "./convert-openai-usage.js";
import { imageBase64Spans } from "./image-base64-spans.js";
import { streamError } from "./responses.js";

// Image usage ({input_tokens, output_tokens, input_tokens_details}) reads like the Responses API's; the image
// quota rules classify the answer's own `usage` (src/billing/image-quota.ts), this is the token view of it.

/**
 * An ImagesResponse parsed without its images: each `data[i].b64_json` that is canonical base64 is cut out of the
 * text before JSON.parse, and put back into the parse as a CanonicalBase64 over the bytes it arrived in, which the
 * answer is then written from (src/media/image-answer.ts): a megabyte image is neither parsed, nor made a string,
 * nor serialised again. `raw` is the text without them. Base64 that is not canonical stays in the text, parsed as
 * before, and is refused by delivery's own check with the same reason.
 *
 * Cutting a span out changes nothing else: it lies inside a string (imageBase64Spans tracks strings and nesting as
 * JSON does) and holds only alphabet characters, so the text parses exactly when the whole answer would have, and
 * the parse then has an item with `b64_json: ""` at each span's index.
 */
export const parseImagesAnswer: JsonParse = (bytes) => {
  const spans = imageBase64Spans(bytes);
  if (spans === null || spans.length === 0) return parseJson(bytes);
  const lifted: { item: number; base64: CanonicalBase64 }[] = [];
  let raw = "";
  let at = 0;
  for (const span of spans) {
    const base64 = CanonicalBase64.ofBytes(bytes.subarray(span.start, span.end));
    if (base64 === null) continue;
    // A span starts and ends beside a quote (ASCII), so no UTF-8 sequence is cut.
    raw += bytes.toString("utf8", at, span.start);
    at = span.end;
    lifted.push({ item: span.item, base64 });
  }
  raw += bytes.toString("utf8", at);
  const body = JSON.parse(raw) as { data: Record<string, unknown>[] };
  for (const { item, base64 } of lifted) body.data[item]!.b64_json = base64;
  return { body, raw };
};

/** POST {base_url}/images/generations; the gateway asks for JSON (images may be tens of megabytes of base64). */
export async function openaiImageGenerations(endpoint: Endpoint, body: Record<string, unknown>, options: CallOptions): Promise<JsonResult> {
  const res = await postToEndpoint(endpoint, body, options, false);
  return readJsonResult(res, options.signal, (json) => convertResponsesUsage(json.usage), endpoint.maxAnswerBytes, parseImagesAnswer);
}

/**
 * An edit stream has no last event: one `image_edit.completed` per image (with `n` images, several), after any
 * of which the body may end; an `error` event is raised by its code, its text never relayed.
 */
const editSseRules: SseRules = {
  isComplete: (data) => data.type === "image_edit.completed",
  toError: (data) => (data.type === "error" ? streamError(asString(data.code)) : null),
};

/** POST {base_url}/images/edits with a JSON body (images as URLs or data URIs); `stream: true` answers SSE. */
export function openaiImageEdits(
  endpoint: Endpoint,
  body: Record<string, unknown>,
  options: CallOptions,
): Promise<JsonResult | StreamResult> {
  return postAndRead(endpoint, body, options, {
    rules: editSseRules,
    usageOf: (json) => convertResponsesUsage(json.usage),
    parse: parseImagesAnswer,
  });
}
