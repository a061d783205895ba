import type { ProviderConfig } from "../../config/schema.js";
import { createPool } from "../http.js";
import type { ProviderAdapter } from "../types.js";
import { openaiChatCompletions } from "./chat-completions.js";

export function createOpenAIAdapter(provider: ProviderConfig): ProviderAdapter {
  const pool = createPool(provider);
  return {
    protocol: "openai",
    chatCompletions: (body, options) => openaiChatCompletions(pool, provider, body, options),
    close: () => pool.close(),
  };
}
