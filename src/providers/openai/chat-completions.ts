import type { Pool } from "undici";
import type { ProviderConfig } from "../../config/schema.js";
import { classifyError, postJson } from "../http.js";
import { parseSse } from "../sse.js";
import type { CallOptions, JsonResult, StreamEvent, StreamResult } from "../types.js";
import { UpstreamError } from "../types.js";
import { convertOpenAIUsage } from "./convert-usage.js";

/** What a chat request to one provider needs besides its body. */
export interface ChatEndpoint {
  pool: Pool;
  provider: ProviderConfig;
  /** The request path, base URL path included. */
  path: string;
  /** Request headers with the provider's own key, for a JSON answer and for a stream. */
  headers: { json: Record<string, string>; stream: Record<string, string> };
}

export function chatHeaders(apiKey: string, stream: boolean): Record<string, string> {
  return { "content-type": "application/json", authorization: `Bearer ${apiKey}`, accept: stream ? "text/event-stream" : "application/json" };
}

/** POST {base_url}/chat/completions. Streams ask for usage when the provider supports it. */
export async function openaiChatCompletions(
  endpoint: ChatEndpoint,
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
    headers: options.apiKey === undefined ? endpoint.headers[stream ? "stream" : "json"] : chatHeaders(options.apiKey, stream),
    body: JSON.stringify(upstreamBody),
    signal: options.signal,
  });
  const contentType = String(res.headers["content-type"] ?? "");
  if (stream) {
    if (!contentType.startsWith("text/event-stream")) {
      await res.body.dump().catch(() => {});
      throw new UpstreamError("protocol", res.statusCode);
    }
    return { kind: "stream", status: res.statusCode, batches: guard(parseSse(res.body), options.signal) };
  }
  let raw: string;
  try {
    raw = await res.body.text();
  } catch (err) {
    throw classifyError(err, options.signal);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new UpstreamError("protocol", res.statusCode);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new UpstreamError("protocol", res.statusCode);
  const json = parsed as Record<string, unknown>;
  return { kind: "json", status: res.statusCode, body: json, raw, usage: convertOpenAIUsage(json.usage) };
}

/** Network failures while iterating surface as UpstreamError, like failures before the first byte. */
async function* guard(batches: AsyncGenerator<StreamEvent[]>, signal: AbortSignal): AsyncGenerator<StreamEvent[]> {
  try {
    yield* batches;
  } catch (err) {
    throw classifyError(err, signal);
  }
}
