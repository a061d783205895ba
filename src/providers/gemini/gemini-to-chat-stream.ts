import { asArray, asObject, tokenCount } from "../json-guards.js";
import {
  candidateOutput,
  chatCompletionId,
  chatToolCall,
  isBlockedPrompt,
  mapGeminiFinishReason,
  toolCallId,
  type ChatFinishReason,
  type ChatImage,
  type ChatToolCallOut,
  type ChatUsage,
} from "./convert-gemini-answer-to-chat.js";

// Gemini streamGenerateContent (alt=sse) chunks → OpenAI chat.completion.chunk objects, for a chat client served by
// a `gemini` target. Each choice opens with a chunk giving its role; then each Gemini chunk gives one chat chunk
// with every candidate's text, function calls (whole: Gemini never streams a call's arguments in pieces) and
// images, and the finish reason where the candidate has one. The chunks are objects: the relay delivers their
// images (src/providers/upstream-images/chat-images.ts) before it writes them. The usage chunk and `[DONE]` are
// the relay's, written once the stream ended.

export type ChatChunkChoice = {
  index: number;
  delta: { role?: "assistant"; content?: string; tool_calls?: (ChatToolCallOut & { index: number })[]; images?: ChatImage[] };
  logprobs: null;
  finish_reason: ChatFinishReason | null;
};

export type ChatChunk = {
  id: string;
  object: "chat.completion.chunk";
  created: number;
  model: string;
  choices: ChatChunkChoice[];
  usage?: ChatUsage;
};

export interface GeminiToChatStreamOptions {
  /** The model ID the client asked for. */
  publicModel: string;
}

export interface GeminiToChatStream {
  /** The chat chunks one Gemini chunk gives (none for a chunk with nothing to say). */
  push(data: Record<string, unknown>): ChatChunk[];
  /** A chunk finishing, with `reason`, every choice that has not finished (a stream the gateway ends at its cap); null when none is left. */
  finishAll(reason: ChatFinishReason): ChatChunk | null;
  /** The usage chunk: no choices, the usage. */
  usageChunk(usage: ChatUsage): ChatChunk;
}

interface ChoiceState {
  /** Tool calls so far: their chat `index`, and whether the turn ends as `tool_calls`. */
  calls: number;
  finished: boolean;
}

export function createGeminiToChatStream(options: GeminiToChatStreamOptions): GeminiToChatStream {
  let id: string | undefined;
  let calls = 0;
  const created = Math.floor(Date.now() / 1000);
  const choices = new Map<number, ChoiceState>();

  const chunk = (list: ChatChunkChoice[]): ChatChunk => ({
    id: (id ??= chatCompletionId(undefined)),
    object: "chat.completion.chunk",
    created,
    model: options.publicModel,
    choices: list,
  });

  /** The choice's state; a choice seen for the first time adds its role chunk to `opening`. */
  const choiceAt = (index: number, opening: ChatChunkChoice[]): ChoiceState => {
    let state = choices.get(index);
    if (!state) {
      choices.set(index, (state = { calls: 0, finished: false }));
      opening.push({ index, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null });
    }
    return state;
  };

  return {
    push(data) {
      id ??= chatCompletionId(data.responseId);
      const opening: ChatChunkChoice[] = [];
      const deltas: ChatChunkChoice[] = [];
      asArray(data.candidates).forEach((item, position) => {
        const candidate = asObject(item);
        if (!candidate) return;
        const index = tokenCount(candidate.index) ?? position;
        const state = choiceAt(index, opening);
        const output = candidateOutput(candidate.content);
        const delta: ChatChunkChoice["delta"] = {};
        if (output.text) delta.content = output.text;
        if (output.calls.length > 0)
          delta.tool_calls = output.calls.map((call) =>
            Object.assign({ index: state.calls++ }, chatToolCall(toolCallId(id!, calls++), call)),
          );
        if (output.images.length > 0) delta.images = output.images;
        let finish: ChatFinishReason | null = null;
        if (candidate.finishReason !== undefined && !state.finished) {
          finish = mapGeminiFinishReason(candidate.finishReason, state.calls > 0);
          state.finished = true;
        }
        if (Object.keys(delta).length > 0 || finish) deltas.push({ index, delta, logprobs: null, finish_reason: finish });
      });
      if (deltas.length === 0 && choices.size === 0 && isBlockedPrompt(data)) {
        choiceAt(0, opening).finished = true;
        deltas.push({ index: 0, delta: {}, logprobs: null, finish_reason: "content_filter" });
      }
      const out: ChatChunk[] = [];
      if (opening.length > 0) out.push(chunk(opening));
      if (deltas.length > 0) out.push(chunk(deltas));
      return out;
    },

    finishAll(reason) {
      if (choices.size === 0) choices.set(0, { calls: 0, finished: false });
      const list: ChatChunkChoice[] = [];
      for (const [index, state] of [...choices.entries()].sort(([a], [b]) => a - b)) {
        if (state.finished) continue;
        state.finished = true;
        list.push({ index, delta: {}, logprobs: null, finish_reason: reason });
      }
      return list.length > 0 ? chunk(list) : null;
    },

    usageChunk(usage) {
      return Object.assign(chunk([]), { usage });
    },
  };
}
