import { asArray, asObject, asString } from "../json-guards.js";
import { convertOpenAIUsage } from "../openai/convert-openai-usage.js";
import type { UsageReport } from "../types.js";
import { chatText } from "../openai/read-chat-completion.js";
import { messageIdFromChatId, toAnthropicUsage, toolUseId } from "./convert-chat-to-message.js";
import { mapChatFinishReason } from "./map-anthropic-finish-reason.js";
import type { AnthropicStopReason } from "./message-types.js";
import { extended } from "../../objects.js";

// OpenAI chat SSE chunks → Anthropic SSE events. The official sequence: message_start, then per content block
// content_block_start / content_block_delta… / content_block_stop, then message_delta (stop reason and final
// usage) and message_stop. Chat sends its usage in a last chunk after the finish reason, so message_delta is
// only written by end(), which also takes the usage the gateway settles.

export interface ChatToMessagesStreamOptions {
  /** The model ID the client asked for. */
  publicModel: string;
  /** The Message id; by default derived from the first chunk's id. */
  messageId?: string;
  /** Prompt tokens known before the answer (the gateway's count), for message_start. */
  promptTokens?: number;
}

export interface ChatToMessagesStream {
  /** The SSE frames one chat chunk gives (often none, e.g. for the usage chunk). */
  push(chunk: Record<string, unknown>): string[];
  /** The closing frames; `usage` is what the gateway settles, else the stream's own, else the prompt count. */
  end(usage?: UsageReport | null): string[];
}

const frame = (type: string, data: Record<string, unknown>) => `event: ${type}\ndata: ${JSON.stringify(extended({ type }, data))}\n\n`;

interface ToolState {
  /** The content block index, once the call's name is known and its block started. */
  block: number | null;
  id: unknown;
  name: string | undefined;
  /** Argument text that arrived before the name (the block cannot start without it). */
  pending: string;
}

export function createChatToMessagesStream(options: ChatToMessagesStreamOptions): ChatToMessagesStream {
  return new ChatToMessages(options);
}

/** One stream's translation. A class: its methods are defined once, not a closure each per stream. */
class ChatToMessages implements ChatToMessagesStream {
  private messageId: string | undefined;
  private started = false;
  private nextBlock = 0;
  /** The open content block: a text block, or the chat index of a tool call. */
  private open: { block: number; tool: number | null } | null = null;
  private readonly tools = new Map<number, ToolState>();
  private stopReason: AnthropicStopReason | null = null;
  private reported: UsageReport | null = null;

  constructor(private readonly options: ChatToMessagesStreamOptions) {
    this.messageId = options.messageId;
  }

  push(chunk: Record<string, unknown>): string[] {
    const out: string[] = [];
    this.reported = convertOpenAIUsage(chunk.usage) ?? this.reported;
    if (!this.started) this.messageStart(out, chunk.id);
    for (const item of asArray(chunk.choices)) {
      const choice = asObject(item);
      // An Anthropic client asks for one answer; other choices (n > 1) have no place in a Message.
      if (!choice || (choice.index ?? 0) !== 0) continue;
      const delta = asObject(choice.delta);
      const value = chatText(delta?.content) + (asString(delta?.refusal) ?? "");
      if (value) this.textDelta(out, value);
      asArray(delta?.tool_calls).forEach((call, position) => {
        const c = asObject(call);
        if (c) this.toolDelta(out, c, position);
      });
      if (typeof choice.finish_reason === "string") this.stopReason = mapChatFinishReason(choice.finish_reason);
    }
    return out;
  }

  end(usage?: UsageReport | null): string[] {
    const out: string[] = [];
    if (!this.started) this.messageStart(out, undefined);
    this.closeBlock(out);
    const final = toAnthropicUsage(usage ?? this.known());
    const { cache_creation: _c, inference_geo: _g, service_tier: _s, ...deltaUsage } = final;
    out.push(
      frame("message_delta", {
        delta: { stop_reason: this.stopReason ?? "end_turn", stop_sequence: null, stop_details: null, container: null },
        usage: deltaUsage,
      }),
    );
    out.push(frame("message_stop", {}));
    return out;
  }

  private known(): UsageReport {
    return this.reported ?? { promptTokens: this.options.promptTokens ?? 0, completionTokens: 0, cachedTokens: 0 };
  }

  private messageStart(out: string[], chatId: unknown): void {
    this.started = true;
    this.messageId ??= messageIdFromChatId(chatId);
    const usage = toAnthropicUsage(this.known());
    // output_tokens is 0 here: nothing is generated yet, and message_delta carries the cumulative count.
    const message = {
      id: this.messageId,
      type: "message",
      role: "assistant",
      content: [],
      model: this.options.publicModel,
      stop_reason: null,
      stop_sequence: null,
      stop_details: null,
      container: null,
    };
    out.push(frame("message_start", { message: extended(message, { usage: extended(usage, { output_tokens: 0 }) }) }));
  }

  private closeBlock(out: string[]): void {
    if (this.open) out.push(frame("content_block_stop", { index: this.open.block }));
    this.open = null;
  }

  private openBlock(out: string[], tool: number | null, contentBlock: Record<string, unknown>): number {
    this.closeBlock(out);
    const index = this.nextBlock++;
    this.open = { block: index, tool };
    out.push(frame("content_block_start", { index, content_block: contentBlock }));
    return index;
  }

  private textDelta(out: string[], value: string): void {
    const open = this.open;
    const index = open && open.tool === null ? open.block : this.openBlock(out, null, { type: "text", text: "", citations: null });
    out.push(frame("content_block_delta", { index, delta: { type: "text_delta", text: value } }));
  }

  private argumentsDelta(out: string[], block: number, partial: string): void {
    if (partial) out.push(frame("content_block_delta", { index: block, delta: { type: "input_json_delta", partial_json: partial } }));
  }

  private toolDelta(out: string[], call: Record<string, unknown>, position: number): void {
    const index = typeof call.index === "number" ? call.index : position;
    const fn = asObject(call.function);
    let state = this.tools.get(index);
    if (!state) this.tools.set(index, (state = { block: null, id: undefined, name: undefined, pending: "" }));
    state.id ??= call.id;
    state.name ??= asString(fn?.name) || undefined;
    const partial = asString(fn?.arguments) ?? "";
    if (state.block === null) {
      state.pending += partial;
      if (state.name === undefined) return;
      const id = toolUseId(state.id, this.messageId!, index);
      state.block = this.openBlock(out, index, { type: "tool_use", id, name: state.name, input: {}, caller: { type: "direct" } });
      this.argumentsDelta(out, state.block, state.pending);
      state.pending = "";
      return;
    }
    // Chat never interleaves calls in practice; a late fragment of an earlier call still goes to its own block.
    this.argumentsDelta(out, state.block, partial);
  }
}
