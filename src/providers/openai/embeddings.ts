import { postToEndpoint, type Endpoint } from "../http.js";
import { readJsonResult } from "../read-result.js";
import type { CallOptions, JsonResult } from "../types.js";
import { convertEmbeddingsUsage } from "./convert-openai-usage.js";

/** POST {base_url}/embeddings; always JSON. */
export async function openaiEmbeddings(endpoint: Endpoint, body: Record<string, unknown>, options: CallOptions): Promise<JsonResult> {
  const res = await postToEndpoint(endpoint, body, options, false);
  return readJsonResult(res, options.signal, (json) => convertEmbeddingsUsage(json.usage), endpoint.maxAnswerBytes);
}
