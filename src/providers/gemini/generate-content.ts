import { postToEndpoint, type Endpoint, type HeadersFor } from "../http.js";
import { asArray, asObject } from "../json-guards.js";
import { readJsonResult, readStreamResult } from "../read-result.js";
import type { SseRules } from "../sse.js";
import type { CallOptions, JsonResult, StreamResult } from "../types.js";
import { UpstreamError } from "../types.js";
import { convertGeminiUsage } from "./convert-gemini-usage.js";

export const geminiHeaders: HeadersFor = (apiKey, stream) => ({
  "content-type": "application/json",
  accept: stream ? "text/event-stream" : "application/json",
  "x-goog-api-key": apiKey,
});

/**
 * The model's resource name in the URL: a bare ID becomes `models/{id}`; a full name (`models/x`,
 * `tunedModels/y`) is kept. Names come from the operator's config; each segment is still encoded, so a
 * character such as `?` or `#` stays part of the name.
 */
export function geminiModelPath(model: string): string {
  const name = model.includes("/") ? model : `models/${model}`;
  return name.split("/").map(encodeURIComponent).join("/");
}

/** The chunk a Gemini stream ends with: one with a finish reason, or a blocked prompt. Its usageMetadata is final. */
export const isFinalGeminiChunk = (data: Record<string, unknown>): boolean =>
  asArray(data.candidates).some((c) => asObject(c)?.finishReason !== undefined) || asObject(data.promptFeedback)?.blockReason !== undefined;

/**
 * Gemini streams have no last event: the body ends after the final chunk. An `{error}` chunk is raised by its
 * HTTP code.
 */
export const geminiSseRules: SseRules = {
  isComplete: isFinalGeminiChunk,
  toError: (data) => {
    const error = asObject(data.error);
    if (!error) return null;
    const code = error.code;
    return new UpstreamError("status", typeof code === "number" && Number.isInteger(code) && code >= 400 && code <= 599 ? code : 502);
  },
};

/** The endpoint's path is `{base_url}/v1beta`; the model and method follow per request. */
function post(endpoint: Endpoint, method: string, body: Record<string, unknown>, options: CallOptions, stream: boolean) {
  return postToEndpoint(endpoint, body, options, stream, `/${geminiModelPath(options.target.upstreamModel)}:${method}`);
}

/** POST {base_url}/v1beta/models/{target model}:generateContent. The model is the URL's, never the body's. */
export async function geminiGenerateContent(endpoint: Endpoint, body: Record<string, unknown>, options: CallOptions): Promise<JsonResult> {
  const res = await post(endpoint, "generateContent", body, options, false);
  return readJsonResult(res, options.signal, (json) => convertGeminiUsage(json.usageMetadata), endpoint.maxAnswerBytes);
}

/** POST ...:streamGenerateContent?alt=sse: `data: {GenerateContentResponse}` chunks. */
export async function geminiStreamGenerateContent(
  endpoint: Endpoint,
  body: Record<string, unknown>,
  options: CallOptions,
): Promise<StreamResult> {
  const res = await post(endpoint, "streamGenerateContent?alt=sse", body, options, true);
  return readStreamResult(res, options.signal, geminiSseRules);
}
