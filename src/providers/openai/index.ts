import type { ProviderConfig } from "../../config/schema.js";
import { createPool, upstreamPath } from "../http.js";
import type { ProviderAdapter } from "../types.js";
import { chatHeaders, openaiChatCompletions, type ChatEndpoint } from "./chat-completions.js";

export function createOpenAIAdapter(provider: ProviderConfig): ProviderAdapter {
  const pool = createPool(provider);
  // Worked out once per provider rather than per request: URL parsing and header objects are on the hot path.
  const endpoint: ChatEndpoint = {
    pool,
    provider,
    path: upstreamPath(provider, "/chat/completions"),
    headers: { json: chatHeaders(provider.api_key, false), stream: chatHeaders(provider.api_key, true) },
  };
  return {
    protocol: "openai",
    chatCompletions: (body, options) => openaiChatCompletions(endpoint, body, options),
    close: () => pool.close(),
  };
}
