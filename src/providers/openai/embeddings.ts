import { postJson } from "../http.js";
import { readJsonResult } from "../read-result.js";
import type { CallOptions, JsonResult } from "../types.js";
import { convertEmbeddingsUsage } from "./convert-usage.js";
import { openaiHeaders, type OpenAIEndpoint } from "./endpoint.js";

/** POST {base_url}/embeddings; always JSON. */
export async function openaiEmbeddings(endpoint: OpenAIEndpoint, body: Record<string, unknown>, options: CallOptions): Promise<JsonResult> {
  const res = await postJson({
    pool: endpoint.pool,
    provider: endpoint.provider,
    path: endpoint.path,
    headers: options.apiKey === undefined ? endpoint.headers.json : openaiHeaders(options.apiKey, false),
    body: JSON.stringify(body),
    signal: options.signal,
  });
  return readJsonResult(res, options.signal, (json) => convertEmbeddingsUsage(json.usage));
}
