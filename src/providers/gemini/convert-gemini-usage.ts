import { asObject, tokenCount } from "../json-guards.js";
import type { StreamUsageReader, UsageReport } from "../types.js";

// Gemini's `usageMetadata`: promptTokenCount already includes cachedContentTokenCount; tool-use prompts
// (toolUsePromptTokenCount) are input too; thoughtsTokenCount is generated and billed as output, beside
// candidatesTokenCount. Zero counts are left out of proto3 JSON, so an absent count is 0, except the prompt,
// which a real answer always has.

const countOrZero = (value: unknown): number | null => (value === undefined ? 0 : tokenCount(value));

export function convertGeminiUsage(usageMetadata: unknown): UsageReport | null {
  const u = asObject(usageMetadata);
  if (!u) return null;
  const prompt = tokenCount(u.promptTokenCount);
  const toolPrompt = countOrZero(u.toolUsePromptTokenCount);
  const candidates = countOrZero(u.candidatesTokenCount);
  const thoughts = countOrZero(u.thoughtsTokenCount);
  const cached = countOrZero(u.cachedContentTokenCount);
  if (prompt === null || toolPrompt === null || candidates === null || thoughts === null || cached === null) return null;
  const promptTokens = prompt + toolPrompt;
  return { promptTokens, completionTokens: candidates + thoughts, cachedTokens: Math.min(cached, promptTokens) };
}

/** Every streamed chunk may carry usageMetadata, counted so far; the last one is final. */
export const readGeminiStreamUsage: StreamUsageReader = (data, prior) => convertGeminiUsage(data.usageMetadata) ?? prior;
