import { asArray, asObject, asString } from "../json-guards.js";
import { convertOpenAIUsage } from "../openai/convert-openai-usage.js";
import { chatText, parseToolArguments } from "../openai/read-chat-completion.js";
import type { UsageReport } from "../types.js";
import { mapChatFinishReason } from "./map-gemini-finish-reason.js";
import type { GeminiOutputPart, GeminiUsageMetadata, GenerateContentResponse } from "./response-types.js";

// OpenAI chat completion → Gemini GenerateContentResponse, for a Gemini client served by an OpenAI-chat
// upstream. Every choice is a candidate (candidateCount maps to n).

export interface ChatToGenerateContentOptions {
  /** The model ID the client asked for, as modelVersion. */
  publicModel: string;
  /** The usage the gateway settles (e.g. its own count); by default the completion's. */
  usage?: UsageReport | null;
}

/** Chat's reasoning tokens are part of completion_tokens; they stay in candidatesTokenCount (no thoughts split). */
export function toGeminiUsage(usage: UsageReport): GeminiUsageMetadata {
  const out: GeminiUsageMetadata = { promptTokenCount: usage.promptTokens, totalTokenCount: usage.promptTokens + usage.completionTokens };
  // proto3 JSON leaves zero counts out.
  if (usage.completionTokens > 0) out.candidatesTokenCount = usage.completionTokens;
  if (usage.cachedTokens > 0) out.cachedContentTokenCount = usage.cachedTokens;
  return out;
}

/** A function call part; the chat call id rides along so the client's functionResponse can name it. */
export function functionCallPart(id: unknown, name: string, args: unknown): GeminiOutputPart {
  const callId = asString(id);
  const parsed = parseToolArguments(args);
  return { functionCall: callId ? { id: callId, name, args: parsed } : { name, args: parsed } };
}

/** Candidates always hold a part: an empty answer is one empty text, as Gemini writes it. */
export const orEmptyText = (parts: GeminiOutputPart[]): GeminiOutputPart[] => (parts.length > 0 ? parts : [{ text: "" }]);

export function convertChatToGenerateContent(
  completion: Record<string, unknown>,
  options: ChatToGenerateContentOptions,
): GenerateContentResponse {
  const candidates = asArray(completion.choices).flatMap((item, position) => {
    const choice = asObject(item);
    if (!choice) return [];
    const message = asObject(choice.message);
    const parts: GeminiOutputPart[] = [];
    const text = chatText(message?.content) + (asString(message?.refusal) ?? "");
    if (text) parts.push({ text });
    for (const call of asArray(message?.tool_calls)) {
      const fn = asObject(asObject(call)?.function);
      const name = asString(fn?.name);
      if (name) parts.push(functionCallPart(asObject(call)?.id, name, fn?.arguments));
    }
    const index = typeof choice.index === "number" && Number.isSafeInteger(choice.index) ? choice.index : position;
    return [
      { content: { role: "model" as const, parts: orEmptyText(parts) }, finishReason: mapChatFinishReason(choice.finish_reason), index },
    ];
  });
  const usage = options.usage !== undefined ? options.usage : convertOpenAIUsage(completion.usage);
  const response: GenerateContentResponse = { candidates, modelVersion: options.publicModel };
  if (usage) response.usageMetadata = toGeminiUsage(usage);
  const id = asString(completion.id);
  if (id) response.responseId = id;
  return response;
}
