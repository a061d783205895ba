import { postJson } from "../http.js";
import { readJsonResult, readStreamResult } from "../read-result.js";
import type { CallOptions, JsonResult, StreamResult } from "../types.js";
import { convertOpenAIUsage } from "./convert-usage.js";
import { openaiHeaders, type OpenAIEndpoint } from "./endpoint.js";

/** POST {base_url}/chat/completions. Streams ask for usage when the provider supports it. */
export async function openaiChatCompletions(
  endpoint: OpenAIEndpoint,
  body: Record<string, unknown>,
  options: CallOptions,
): Promise<JsonResult | StreamResult> {
  const { provider } = endpoint;
  const stream = body.stream === true;
  const upstreamBody =
    stream && provider.stream_usage
      ? { ...body, stream_options: { ...(body.stream_options as object | undefined), include_usage: true } }
      : body;
  const res = await postJson({
    pool: endpoint.pool,
    provider,
    path: endpoint.path,
    headers: options.apiKey === undefined ? endpoint.headers[stream ? "stream" : "json"] : openaiHeaders(options.apiKey, stream),
    body: JSON.stringify(upstreamBody),
    signal: options.signal,
  });
  if (stream) return readStreamResult(res, options.signal);
  return readJsonResult(res, options.signal, (json) => convertOpenAIUsage(json.usage));
}
