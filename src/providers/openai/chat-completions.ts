import type { Endpoint } from "../http.js";
import { postAndRead } from "../read-result.js";
import type { SseRules } from "../sse.js";
import type { CallOptions, JsonResult, StreamResult } from "../types.js";
import { asObject, asString } from "../json-guards.js";
import { convertOpenAIUsage } from "./convert-openai-usage.js";
import { streamError } from "./responses.js";
import { extended } from "../../objects.js";

/**
 * A chat stream's in-band error (`data: {"error": {...}}`, OpenAI's shape for a failure mid-stream) carries the
 * upstream's own text, internal host names included: raised by its code, never relayed (docs/security.md, "Streams").
 */
export const chatSseRules: SseRules = {
  toError: (data) => {
    const error = asObject(data.error);
    return error ? streamError(asString(error.code)) : null;
  },
};

/** POST {base_url}/chat/completions. Streams ask for usage when the provider supports it. */
export async function openaiChatCompletions(
  endpoint: Endpoint,
  body: Record<string, unknown>,
  options: CallOptions,
): Promise<JsonResult | StreamResult> {
  const stream = body.stream === true;
  const upstreamBody =
    stream && endpoint.provider.stream_usage
      ? extended(body, { stream_options: extended((body.stream_options as object | undefined) ?? {}, { include_usage: true }) })
      : body;
  return postAndRead(endpoint, upstreamBody, options, { rules: chatSseRules, usageOf: (json) => convertOpenAIUsage(json.usage) });
}
