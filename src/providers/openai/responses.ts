import type { Endpoint } from "../http.js";
import { asObject, asString } from "../json-guards.js";
import { postAndRead } from "../read-result.js";
import type { SseRules } from "../sse.js";
import type { CallOptions, JsonResult, StreamResult } from "../types.js";
import { UpstreamError } from "../types.js";
import { convertResponsesUsage } from "./convert-openai-usage.js";

/**
 * A Responses stream ends with response.completed or response.incomplete (usage in both). `error` and
 * response.failed carry the upstream's own error text, so they become an UpstreamError: 429 for a rate limit,
 * else 502 (the upstream failed while answering).
 */
export const responsesSseRules: SseRules = {
  isLast: (data) => data.type === "response.completed" || data.type === "response.incomplete",
  toError: (data) => {
    if (data.type === "error") return streamError(asString(data.code));
    if (data.type === "response.failed") return streamError(asString(asObject(asObject(data.response)?.error)?.code));
    return null;
  },
};

/** An in-stream error event of OpenAI's typed streams (responses, image edits), by its code only. */
export function streamError(code: string | undefined): UpstreamError {
  return new UpstreamError("status", code === "rate_limit_exceeded" ? 429 : 502);
}

/** POST {base_url}/responses, JSON or (stream: true) SSE; the usage of a stream is in its terminal event. */
export async function openaiResponses(
  endpoint: Endpoint,
  body: Record<string, unknown>,
  options: CallOptions,
): Promise<JsonResult | StreamResult> {
  return postAndRead(endpoint, body, options, { rules: responsesSseRules, usageOf: (json) => convertResponsesUsage(json.usage) });
}
