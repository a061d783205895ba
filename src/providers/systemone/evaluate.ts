import { postToEndpoint, type Endpoint, type HeadersFor } from "../http.js";
import { readJsonResult } from "../read-result.js";
import type { CallOptions, JsonResult } from "../types.js";
import { convertSystemOneUsage } from "./convert-systemone-usage.js";

/** The evaluator's request headers: a bearer key; it answers JSON only. */
export const systemOneHeaders: HeadersFor = (apiKey) => ({
  "content-type": "application/json",
  authorization: `Bearer ${apiKey}`,
  accept: "application/json",
});

/** POST {base_url}/v1/systemone with the request's JSON text as it is (model already set to the upstream version). */
export async function systemOneEvaluate(endpoint: Endpoint, body: string, options: CallOptions): Promise<JsonResult> {
  const res = await postToEndpoint(endpoint, body, options, false);
  return readJsonResult(res, options.signal, (json) => convertSystemOneUsage(json.usage, res.statusCode), endpoint.maxAnswerBytes);
}
