import type { ProviderConfig } from "../../config/schema.js";
import { createEndpoint, createPool } from "../http.js";
import type { ProviderAdapter } from "../types.js";
import { openaiChatCompletions } from "./chat-completions.js";
import { openaiEmbeddings } from "./embeddings.js";
import { openaiHeaders } from "./endpoint.js";
import { openaiResponses } from "./responses.js";

/** `base_url` includes `/v1`, as the OpenAI SDK's base URL does. */
export function createOpenAIAdapter(provider: ProviderConfig): ProviderAdapter {
  const pool = createPool(provider);
  const chat = createEndpoint(pool, provider, "/chat/completions", openaiHeaders);
  const responses = createEndpoint(pool, provider, "/responses", openaiHeaders);
  const embeddings = createEndpoint(pool, provider, "/embeddings", openaiHeaders);
  return {
    protocol: "openai",
    chatCompletions: (body, options) => openaiChatCompletions(chat, body, options),
    responses: (body, options) => openaiResponses(responses, body, options),
    embeddings: (body, options) => openaiEmbeddings(embeddings, body, options),
    close: () => pool.close(),
  };
}
