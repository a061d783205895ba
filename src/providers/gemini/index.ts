import type { ProviderConfig } from "../../config/schema.js";
import { createEndpoint, createPool } from "../http.js";
import type { ProviderAdapter } from "../types.js";
import { geminiGenerateContent, geminiHeaders, geminiStreamGenerateContent } from "./generate-content.js";

/**
 * `base_url` is the host root, as the Gemini SDK's base URL is: requests go to
 * `{base_url}/v1beta/models/{model}:generateContent`. JSON and SSE are two capabilities because Gemini puts
 * the choice in the URL, not in the body.
 */
export function createGeminiAdapter(provider: ProviderConfig): ProviderAdapter {
  const pool = createPool(provider);
  const endpoint = createEndpoint(pool, provider, "/v1beta", geminiHeaders);
  return {
    protocol: "gemini",
    generateContent: (body, options) => geminiGenerateContent(endpoint, body, options),
    streamGenerateContent: (body, options) => geminiStreamGenerateContent(endpoint, body, options),
    close: () => pool.close(),
  };
}
