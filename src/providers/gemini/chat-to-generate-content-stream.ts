import { asArray, asObject, asString } from "../json-guards.js";
import { convertOpenAIUsage } from "../openai/convert-openai-usage.js";
import { chatText } from "../openai/read-chat-completion.js";
import type { UsageReport } from "../types.js";
import { functionCallPart, orEmptyText, toGeminiUsage } from "./convert-chat-to-generate-content.js";
import { mapChatFinishReason } from "./map-gemini-finish-reason.js";
import type { GeminiCandidate, GenerateContentResponse } from "./response-types.js";

// OpenAI chat SSE chunks → Gemini streamGenerateContent (alt=sse) chunks: one `data: {GenerateContentResponse}`
// per chunk with text, and a last chunk, written by end(), with the function calls (Gemini streams a call
// whole, never its arguments in pieces), every candidate's finishReason and usageMetadata. Chat sends its usage
// after the finish reason, so only end() can write that last chunk.

export interface ChatToGenerateContentStreamOptions {
  /** The model ID the client asked for, as modelVersion. */
  publicModel: string;
}

export interface ChatToGenerateContentStream {
  /** The SSE frames one chat chunk gives (none for chunks without text). */
  push(chunk: Record<string, unknown>): string[];
  /** The last frame; `usage` is what the gateway settles, else the stream's own. */
  end(usage?: UsageReport | null): string[];
}

interface ToolCall {
  id: unknown;
  name: string;
  args: string;
}

interface Choice {
  finish: unknown;
  /** Tool calls by their chat index. */
  calls: Map<number, ToolCall>;
}

export function createChatToGenerateContentStream(options: ChatToGenerateContentStreamOptions): ChatToGenerateContentStream {
  let responseId: string | undefined;
  let reported: UsageReport | null = null;
  const choices = new Map<number, Choice>();

  const frame = (candidates: GeminiCandidate[], usage?: UsageReport | null) => {
    const response: GenerateContentResponse = { candidates, modelVersion: options.publicModel };
    if (usage) response.usageMetadata = toGeminiUsage(usage);
    if (responseId) response.responseId = responseId;
    return `data: ${JSON.stringify(response)}\n\n`;
  };

  const choiceAt = (index: number): Choice => {
    let choice = choices.get(index);
    if (!choice) choices.set(index, (choice = { finish: undefined, calls: new Map() }));
    return choice;
  };

  const collectCalls = (choice: Choice, calls: unknown[]) => {
    calls.forEach((item, position) => {
      const call = asObject(item);
      if (!call) return;
      const index = typeof call.index === "number" ? call.index : position;
      const fn = asObject(call.function);
      let known = choice.calls.get(index);
      if (!known) choice.calls.set(index, (known = { id: undefined, name: "", args: "" }));
      known.id ??= call.id;
      known.name ||= asString(fn?.name) ?? "";
      known.args += asString(fn?.arguments) ?? "";
    });
  };

  return {
    push(chunk) {
      responseId ??= asString(chunk.id) || undefined;
      reported = convertOpenAIUsage(chunk.usage) ?? reported;
      const candidates: GeminiCandidate[] = [];
      for (const item of asArray(chunk.choices)) {
        const delta = asObject(item);
        if (!delta) continue;
        const index = typeof delta.index === "number" && Number.isSafeInteger(delta.index) ? delta.index : 0;
        const choice = choiceAt(index);
        const content = asObject(delta.delta);
        const text = chatText(content?.content) + (asString(content?.refusal) ?? "");
        if (text) candidates.push({ content: { role: "model", parts: [{ text }] }, index });
        collectCalls(choice, asArray(content?.tool_calls));
        if (typeof delta.finish_reason === "string") choice.finish = delta.finish_reason;
      }
      return candidates.length > 0 ? [frame(candidates)] : [];
    },

    end(usage) {
      if (choices.size === 0) choiceAt(0);
      const candidates = [...choices.entries()]
        .sort(([a], [b]) => a - b)
        .map(([index, choice]): GeminiCandidate => {
          // A call that never got a name cannot be written as a functionCall.
          const calls = [...choice.calls.entries()].sort(([a], [b]) => a - b).filter(([, call]) => call.name !== "");
          const parts = calls.map(([, call]) => functionCallPart(call.id, call.name, call.args));
          return { content: { role: "model", parts: orEmptyText(parts) }, finishReason: mapChatFinishReason(choice.finish), index };
        });
      return [frame(candidates, usage ?? reported)];
    },
  };
}
