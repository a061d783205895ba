import type { Pool } from "undici";
import type { ProviderConfig } from "../../config/schema.js";
import { classifyError, postJson } from "../http.js";
import { parseSse } from "../sse.js";
import type { CallOptions, JsonResult, StreamEvent, StreamResult } from "../types.js";
import { UpstreamError } from "../types.js";
import { convertOpenAIUsage } from "./convert-usage.js";

/** POST {base_url}/chat/completions. Streams ask for usage when the provider supports it. */
export async function openaiChatCompletions(
  pool: Pool,
  provider: ProviderConfig,
  body: Record<string, unknown>,
  options: CallOptions,
): Promise<JsonResult | StreamResult> {
  const stream = body.stream === true;
  const upstreamBody =
    stream && provider.stream_usage
      ? { ...body, stream_options: { ...(body.stream_options as object | undefined), include_usage: true } }
      : body;
  const res = await postJson({
    pool,
    provider,
    path: "/chat/completions",
    headers: { authorization: `Bearer ${options.apiKey ?? provider.api_key}`, accept: stream ? "text/event-stream" : "application/json" },
    body: JSON.stringify(upstreamBody),
    signal: options.signal,
  });
  const contentType = String(res.headers["content-type"] ?? "");
  if (stream) {
    if (!contentType.startsWith("text/event-stream")) {
      await res.body.dump().catch(() => {});
      throw new UpstreamError("protocol", res.statusCode);
    }
    return { kind: "stream", status: res.statusCode, events: guard(parseSse(res.body), options.signal) };
  }
  let parsed: unknown;
  try {
    parsed = await res.body.json();
  } catch (err) {
    throw err instanceof SyntaxError ? new UpstreamError("protocol", res.statusCode) : classifyError(err, options.signal);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new UpstreamError("protocol", res.statusCode);
  const json = parsed as Record<string, unknown>;
  return { kind: "json", status: res.statusCode, body: json, usage: convertOpenAIUsage(json.usage) };
}

/** Network failures while iterating surface as UpstreamError, like failures before the first byte. */
async function* guard(events: AsyncGenerator<StreamEvent>, signal: AbortSignal): AsyncGenerator<StreamEvent> {
  try {
    yield* events;
  } catch (err) {
    throw classifyError(err, signal);
  }
}
