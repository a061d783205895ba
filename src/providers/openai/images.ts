import { parseLiftingBase64 } from "../upstream-images/lift-base64.js";
import { postToEndpoint, type Endpoint } from "../http.js";
import { asString } from "../json-guards.js";
import { postAndRead, readJsonResult, type JsonParse } from "../read-result.js";
import type { SseRules } from "../sse.js";
import type { CallOptions, JsonResult, StreamResult } from "../types.js";
import { convertResponsesUsage } from "./convert-openai-usage.js";
import { imageBase64Spans } from "./image-base64-spans.js";
import { streamError } from "./responses.js";

// Image usage ({input_tokens, output_tokens, input_tokens_details}) reads like the Responses API's; the image
// quota rules classify the answer's own `usage` (src/billing/image-quota.ts), this is the token view of it.

/**
 * An ImagesResponse parsed without its images (src/providers/upstream-images/lift-base64.ts): each
 * `data[i].b64_json` that is canonical base64 is held as a CanonicalBase64 over the bytes it arrived in.
 */
export const parseImagesAnswer: JsonParse = (bytes) =>
  parseLiftingBase64(bytes, imageBase64Spans(bytes), (body, span, base64) => {
    (body.data as Record<string, unknown>[])[span.item]!.b64_json = base64;
  });

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
