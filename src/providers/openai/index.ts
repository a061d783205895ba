import type { ProviderConfig } from "../../config/schema.js";
import { createPool } from "../http.js";
import type { ProviderAdapter } from "../types.js";
import { openaiChatCompletions } from "./chat-completions.js";
import { openaiEndpoint } from "./endpoint.js";

/** `base_url` includes `/v1`, as the OpenAI SDK's base URL does. */
export function createOpenAIAdapter(provider: ProviderConfig): ProviderAdapter {
  const pool = createPool(provider);
  const chat = openaiEndpoint(pool, provider, "/chat/completions");
  return {
    protocol: "openai",
    chatCompletions: (body, options) => openaiChatCompletions(chat, body, options),
    close: () => pool.close(),
  };
}
