import type { ProviderConfig } from "../../config/schema.js";
import { createPool } from "../http.js";
import type { ProviderAdapter } from "../types.js";
import { openaiChatCompletions } from "./chat-completions.js";
import { openaiEmbeddings } from "./embeddings.js";
import { openaiEndpoint } from "./endpoint.js";
import { openaiResponses } from "./responses.js";

/** `base_url` includes `/v1`, as the OpenAI SDK's base URL does. */
export function createOpenAIAdapter(provider: ProviderConfig): ProviderAdapter {
  const pool = createPool(provider);
  const chat = openaiEndpoint(pool, provider, "/chat/completions");
  const responses = openaiEndpoint(pool, provider, "/responses");
  const embeddings = openaiEndpoint(pool, provider, "/embeddings");
  return {
    protocol: "openai",
    chatCompletions: (body, options) => openaiChatCompletions(chat, body, options),
    responses: (body, options) => openaiResponses(responses, body, options),
    embeddings: (body, options) => openaiEmbeddings(embeddings, body, options),
    close: () => pool.close(),
  };
}
