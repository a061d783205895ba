import type { ProviderConfig } from "../../config/schema.js";
import { createPool, upstreamPath } from "../http.js";
import type { ProviderAdapter } from "../types.js";
import { anthropicHeaders, anthropicMessages, type AnthropicEndpoint } from "./messages.js";

/** `base_url` is the host root, as the Anthropic SDK's base URL is: requests go to `{base_url}/v1/messages`. */
export function createAnthropicAdapter(provider: ProviderConfig): ProviderAdapter {
  const pool = createPool(provider);
  const messages: AnthropicEndpoint = {
    pool,
    provider,
    path: upstreamPath(provider, "/v1/messages"),
    headers: { json: anthropicHeaders(provider.api_key, false), stream: anthropicHeaders(provider.api_key, true) },
  };
  return {
    protocol: "anthropic",
    messages: (body, options) => anthropicMessages(messages, body, options),
    close: () => pool.close(),
  };
}
