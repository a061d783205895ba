import type { Pool } from "undici";
import type { ProviderConfig } from "../../config/schema.js";
import { upstreamPath } from "../http.js";

/** What a request to one OpenAI endpoint of one provider needs besides its body. */
export interface OpenAIEndpoint {
  pool: Pool;
  provider: ProviderConfig;
  /** The request path, base URL path included. */
  path: string;
  /** Request headers with the provider's own key, for a JSON answer and for a stream. */
  headers: { json: Record<string, string>; stream: Record<string, string> };
}

export function openaiHeaders(apiKey: string, stream: boolean): Record<string, string> {
  return { "content-type": "application/json", authorization: `Bearer ${apiKey}`, accept: stream ? "text/event-stream" : "application/json" };
}

/** Worked out once per provider rather than per request: URL parsing and header objects are on the hot path. */
export function openaiEndpoint(pool: Pool, provider: ProviderConfig, path: string): OpenAIEndpoint {
  return {
    pool,
    provider,
    path: upstreamPath(provider, path),
    headers: { json: openaiHeaders(provider.api_key, false), stream: openaiHeaders(provider.api_key, true) },
  };
}
