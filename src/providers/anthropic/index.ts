import type { ProviderConfig, UpstreamAnswerLimits } from "../../config/schema.js";
import { createEndpoint, createPool } from "../http.js";
import type { ProviderAdapter } from "../types.js";
import { anthropicHeaders, anthropicMessages } from "./messages.js";

/** `base_url` is the host root, as the Anthropic SDK's base URL is: requests go to `{base_url}/v1/messages`. */
export function createAnthropicAdapter(provider: ProviderConfig, limits: UpstreamAnswerLimits): ProviderAdapter {
  const pool = createPool(provider);
  const messages = createEndpoint(pool, provider, "/v1/messages", anthropicHeaders, limits.messages);
  return {
    protocol: "anthropic",
    messages: (body, options) => anthropicMessages(messages, body, options),
    close: () => pool.close(),
  };
}
