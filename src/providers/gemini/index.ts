import type { ProviderConfig, UpstreamAnswerLimits } from "../../config/schema.js";
import { createEndpoint, createPool } from "../http.js";
import type { ProviderAdapter } from "../types.js";
import { geminiGenerateContent, geminiHeaders, geminiStreamGenerateContent } from "./generate-content.js";
import { geminiImages } from "./images.js";

/**
 * `base_url` is the host root, as the Gemini SDK's base URL is: requests go to
 * `{base_url}/v1beta/models/{model}:generateContent`. JSON and SSE are two capabilities because Gemini puts
 * the choice in the URL, not in the body.
 */
export function createGeminiAdapter(provider: ProviderConfig, limits: UpstreamAnswerLimits): ProviderAdapter {
  const pool = createPool(provider);
  // One endpoint for both: the cap applies to generateContent's JSON answers; streams are never held whole.
  const endpoint = createEndpoint(pool, provider, "/v1beta", geminiHeaders, limits.generate_content);
  // Image answers are read under the image routes' cap.
  const images = createEndpoint(pool, provider, "/v1beta", geminiHeaders, limits.images);
  return {
    protocol: "gemini",
    generateContent: (body, options) => geminiGenerateContent(endpoint, body, options),
    streamGenerateContent: (body, options) => geminiStreamGenerateContent(endpoint, body, options),
    generateImages: (request, options) => geminiImages(images, request, options),
    close: () => pool.close(),
  };
}
