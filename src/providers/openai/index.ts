import type { ProviderConfig, UpstreamAnswerLimits } from "../../config/schema.js";
import { createEndpoint, createPool } from "../http.js";
import type { ProviderAdapter } from "../types.js";
import { openaiChatCompletions } from "./chat-completions.js";
import { openaiEmbeddings } from "./embeddings.js";
import { openaiBinaryHeaders, openaiHeaders } from "./endpoint.js";
import { openaiImageEdits, openaiImageGenerations } from "./images.js";
import { openaiResponses } from "./responses.js";
import { openaiVideoContent, openaiVideoStatus, openaiVideoSubmit } from "./videos.js";

/** `base_url` includes `/v1`, as the OpenAI SDK's base URL does. */
export function createOpenAIAdapter(provider: ProviderConfig, limits: UpstreamAnswerLimits): ProviderAdapter {
  const pool = createPool(provider);
  const chat = createEndpoint(pool, provider, "/chat/completions", openaiHeaders, limits.chat_completions);
  const responses = createEndpoint(pool, provider, "/responses", openaiHeaders, limits.responses);
  const embeddings = createEndpoint(pool, provider, "/embeddings", openaiHeaders, limits.embeddings);
  const imageGenerations = createEndpoint(pool, provider, "/images/generations", openaiHeaders, limits.images);
  const imageEdits = createEndpoint(pool, provider, "/images/edits", openaiHeaders, limits.images);
  const videos = createEndpoint(pool, provider, "/videos", openaiHeaders, limits.video);
  // The video's bytes are never read as JSON: each download passes its own cap (media.download.max_bytes).
  const videoContent = createEndpoint(pool, provider, "/videos", openaiBinaryHeaders, limits.video);
  return {
    protocol: "openai",
    chatCompletions: (body, options) => openaiChatCompletions(chat, body, options),
    responses: (body, options) => openaiResponses(responses, body, options),
    embeddings: (body, options) => openaiEmbeddings(embeddings, body, options),
    imageGenerations: (body, options) => openaiImageGenerations(imageGenerations, body, options),
    imageEdits: (body, options) => openaiImageEdits(imageEdits, body, options),
    videoSubmit: (body, options) => openaiVideoSubmit(videos, body, options),
    videoStatus: (upstreamId, options) => openaiVideoStatus(videos, upstreamId, options),
    videoContent: (upstreamId, options, maxBytes) => openaiVideoContent(videoContent, upstreamId, options, maxBytes),
    close: () => pool.close(),
  };
}
