import type { Endpoint, HeadersFor } from "../http.js";
import { asObject, asString } from "../json-guards.js";
import { postAndRead } from "../read-result.js";
import type { SseRules } from "../sse.js";
import type { CallOptions, JsonResult, StreamResult } from "../types.js";
import { UpstreamError } from "../types.js";
import { convertAnthropicUsage } from "./convert-anthropic-usage.js";

/** The API version the gateway speaks; the wire shapes of src/providers/anthropic follow it. */
const ANTHROPIC_VERSION = "2023-06-01";

export const anthropicHeaders: HeadersFor = (apiKey, stream) => ({
  "content-type": "application/json",
  accept: stream ? "text/event-stream" : "application/json",
  "x-api-key": apiKey,
  "anthropic-version": ANTHROPIC_VERSION,
});

/** The HTTP status Anthropic documents for each error type, for in-stream `error` events. */
const ERROR_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
};

/** A Messages stream ends with message_stop; an `error` event (e.g. overloaded mid-stream) is raised by status. */
export const anthropicSseRules: SseRules = {
  isLast: (data) => data.type === "message_stop",
  toError: (data) => {
    if (data.type !== "error") return null;
    const type = asString(asObject(data.error)?.type) ?? "";
    return new UpstreamError("status", Object.hasOwn(ERROR_STATUS, type) ? ERROR_STATUS[type]! : 502);
  },
};

/** POST {base_url}/v1/messages, JSON or (stream: true) SSE. The body is forwarded as the client wrote it. */
export async function anthropicMessages(
  endpoint: Endpoint,
  body: Record<string, unknown>,
  options: CallOptions,
): Promise<JsonResult | StreamResult> {
  return postAndRead(endpoint, body, options, { rules: anthropicSseRules, usageOf: (json) => convertAnthropicUsage(json.usage) });
}
