import { randomUUID } from "node:crypto";
import { asArray, asObject, asString } from "../json-guards.js";
import { convertOpenAIUsage } from "../openai/convert-openai-usage.js";
import { chatText, parseToolArguments } from "../openai/read-chat-completion.js";
import type { UsageReport } from "../types.js";
import { mapChatFinishReason } from "./map-anthropic-finish-reason.js";
import type { AnthropicMessage, AnthropicTextOutput, AnthropicToolUseOutput, AnthropicUsage } from "./message-types.js";

// OpenAI chat completion → Anthropic Message, for an Anthropic client served by an OpenAI-chat upstream.

/** `msg_` + the chat id's own characters (so logs of both sides line up), or a fresh id when it has none. */
export function messageIdFromChatId(chatId: unknown): string {
  const suffix = typeof chatId === "string" ? chatId.replace(/^chatcmpl-/, "").replace(/[^A-Za-z0-9_-]/g, "") : "";
  return `msg_${suffix || randomUUID().replaceAll("-", "")}`;
}

const TOOL_ID = /^[A-Za-z0-9_-]+$/;

/**
 * The chat tool call's id when Anthropic's id pattern allows it, so the client's tool_result refers back to the
 * same id upstream; otherwise one derived from the message id and the call's position.
 */
export function toolUseId(callId: unknown, messageId: string, index: number): string {
  return typeof callId === "string" && TOOL_ID.test(callId) ? callId : `toolu_${messageId.slice(4)}_${index}`;
}

/**
 * The gateway's usage in Anthropic's terms: input_tokens excludes cache reads (Anthropic's three prompt parts
 * are disjoint), and the chat protocol knows of no cache writes. Unknown usage reads as zero.
 */
export function toAnthropicUsage(usage: UsageReport | null): AnthropicUsage {
  const cached = usage?.cachedTokens ?? 0;
  return {
    input_tokens: (usage?.promptTokens ?? 0) - cached,
    output_tokens: usage?.completionTokens ?? 0,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
    cache_creation: null,
    inference_geo: null,
    server_tool_use: null,
    service_tier: null,
  };
}

const textOutput = (text: string): AnthropicTextOutput => ({ type: "text", text, citations: null });

export interface ChatToMessageOptions {
  /** The model ID the client asked for, shown in place of the upstream's. */
  publicModel: string;
  /** The usage the gateway settles (e.g. its own count); by default the completion's. */
  usage?: UsageReport | null;
}

/** The first choice becomes the Message (an Anthropic client never asks for more). */
export function convertChatToMessage(completion: Record<string, unknown>, options: ChatToMessageOptions): AnthropicMessage {
  const choice = asObject(asArray(completion.choices)[0]);
  const message = asObject(choice?.message);
  const id = messageIdFromChatId(completion.id);
  const content: AnthropicMessage["content"] = [];
  const text = chatText(message?.content);
  if (text) content.push(textOutput(text));
  const refusal = asString(message?.refusal);
  if (refusal) content.push(textOutput(refusal));
  // Legacy function_call answers are one call without an id.
  const legacy = asObject(message?.function_call);
  const calls = legacy ? [{ function: legacy }] : asArray(message?.tool_calls);
  calls.forEach((call, i) => {
    const fn = asObject(asObject(call)?.function);
    const name = asString(fn?.name);
    if (!name) return;
    const block: AnthropicToolUseOutput = {
      type: "tool_use",
      id: toolUseId(asObject(call)?.id, id, i),
      name,
      input: parseToolArguments(fn?.arguments),
      caller: { type: "direct" },
    };
    content.push(block);
  });
  return {
    id,
    type: "message",
    role: "assistant",
    content,
    model: options.publicModel,
    stop_reason: mapChatFinishReason(choice?.finish_reason),
    stop_sequence: null,
    stop_details: null,
    container: null,
    usage: toAnthropicUsage(options.usage !== undefined ? options.usage : convertOpenAIUsage(completion.usage)),
  };
}
