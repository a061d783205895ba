import type { ProviderConfig, UpstreamAnswerLimits } from "../../config/schema.js";
import { createEndpoint, createPool } from "../http.js";
import type { ProviderAdapter } from "../types.js";
import { systemOneEvaluate, systemOneHeaders } from "./evaluate.js";

/** `base_url` is the evaluator's root: requests go to `{base_url}/v1/systemone`. */
export function createSystemOneAdapter(provider: ProviderConfig, limits: UpstreamAnswerLimits): ProviderAdapter {
  const pool = createPool(provider);
  const endpoint = createEndpoint(pool, provider, "/v1/systemone", systemOneHeaders, limits.evaluate);
  return {
    protocol: "systemone",
    evaluate: (body, options) => systemOneEvaluate(endpoint, body, options),
    close: () => pool.close(),
  };
}
