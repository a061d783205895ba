import type { ProviderConfig, UpstreamAnswerLimits } from "../../config/schema.js";
import { createEndpoint, createPool } from "../http.js";
import { openaiHeaders } from "../openai/endpoint.js";
import type { ProviderAdapter } from "../types.js";
import { videoStatus, videoSubmit } from "./video-generations.js";

/** `base_url` includes `/v1` (docs/architecture.md, "Rules"); a bearer key, as OpenAI-style video APIs take it. */
export function createVideoAdapter(provider: ProviderConfig, limits: UpstreamAnswerLimits): ProviderAdapter {
  const pool = createPool(provider);
  const endpoint = createEndpoint(pool, provider, "/video/generations", openaiHeaders, limits.video);
  return {
    protocol: "video",
    videoSubmit: (body, options) => videoSubmit(endpoint, body, options),
    videoStatus: (upstreamId, options) => videoStatus(endpoint, upstreamId, options),
    close: () => pool.close(),
  };
}
