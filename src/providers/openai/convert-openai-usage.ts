import { asObject, tokenCount } from "../json-guards.js";
import type { StreamUsageReader, UsageReport } from "../types.js";

function report(prompt: unknown, completion: unknown, cached: unknown): UsageReport | null {
  const promptTokens = tokenCount(prompt);
  const completionTokens = tokenCount(completion);
  if (promptTokens === null || completionTokens === null) return null;
  // A provider reporting more cached than prompt tokens is inconsistent; cap so nothing is counted twice.
  return { promptTokens, completionTokens, cachedTokens: Math.min(tokenCount(cached) ?? 0, promptTokens) };
}

/**
 * Chat `CompletionUsage` → the gateway's usage; null when absent or not usable (then the gateway counts).
 * completion_tokens already includes reasoning tokens, prompt_tokens the cached ones.
 */
export function convertOpenAIUsage(usage: unknown): UsageReport | null {
  const u = asObject(usage);
  return u ? report(u.prompt_tokens, u.completion_tokens, asObject(u.prompt_tokens_details)?.cached_tokens) : null;
}

/** Responses `ResponseUsage` {input_tokens, output_tokens, input_tokens_details.cached_tokens}: the same meanings. */
export function convertResponsesUsage(usage: unknown): UsageReport | null {
  const u = asObject(usage);
  return u ? report(u.input_tokens, u.output_tokens, asObject(u.input_tokens_details)?.cached_tokens) : null;
}

/** Embeddings usage {prompt_tokens, total_tokens}: nothing is generated. */
export function convertEmbeddingsUsage(usage: unknown): UsageReport | null {
  const u = asObject(usage);
  return u ? report(u.prompt_tokens, 0, 0) : null;
}

/** Responses streams report usage once, in the response of their terminal event. */
const USAGE_EVENTS = new Set(["response.completed", "response.incomplete"]);

export const readResponsesStreamUsage: StreamUsageReader = (data, prior) => {
  if (typeof data.type !== "string" || !USAGE_EVENTS.has(data.type)) return prior;
  return convertResponsesUsage(asObject(data.response)?.usage) ?? prior;
};
