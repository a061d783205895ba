import type { UsageReport } from "../types.js";

const count = (v: unknown): number | null => (typeof v === "number" && Number.isSafeInteger(v) && v >= 0 ? v : null);

/** OpenAI `CompletionUsage` → the gateway's usage; null when absent or not usable (then the gateway counts). */
export function convertOpenAIUsage(usage: unknown): UsageReport | null {
  if (usage === null || typeof usage !== "object") return null;
  const u = usage as Record<string, unknown>;
  const promptTokens = count(u.prompt_tokens);
  const completionTokens = count(u.completion_tokens);
  if (promptTokens === null || completionTokens === null) return null;
  const details = u.prompt_tokens_details as Record<string, unknown> | null | undefined;
  const cachedTokens = count(details?.cached_tokens) ?? 0;
  return { promptTokens, completionTokens, cachedTokens: Math.min(cachedTokens, promptTokens) };
}
