import type { Endpoint } from "../http.js";
import { postAndRead } from "../read-result.js";
import type { CallOptions, JsonResult, StreamResult } from "../types.js";
import { convertOpenAIUsage } from "./convert-openai-usage.js";
import { extended } from "../../objects.js";

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
  return postAndRead(endpoint, upstreamBody, options, { usageOf: (json) => convertOpenAIUsage(json.usage) });
}
