import { randomUUID } from "node:crypto";
import { asArray, asObject, asString, tokenCount } from "../json-guards.js";
import type { UsageReport } from "../types.js";
import { convertGeminiUsage } from "./convert-gemini-usage.js";

// Gemini GenerateContentResponse → OpenAI chat.completion, for a chat client served by a `gemini` target. The
// pieces (parts, finish reasons, usage) are shared with the stream translation (./gemini-to-chat-stream.ts).
// Upstream answers are read defensively: a field of the wrong type reads as absent.

export type ChatFinishReason = "stop" | "length" | "tool_calls" | "content_filter";

export type ChatImage = { type: "image_url"; image_url: { url: string } };

export type ChatToolCallOut = {
  id: string;
  type: "function";
  function: { name: string; arguments: string };
  /** Google's OpenAI-compatible API's place for a call's thought signature, which Gemini wants back with the call. */
  extra_content?: { google: { thought_signature: string } };
};

export type ChatUsage = {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  prompt_tokens_details: { cached_tokens: number };
  completion_tokens_details: { reasoning_tokens: number };
};

export type ChatCompletionOut = {
  id: string;
  object: "chat.completion";
  created: number;
  model: string;
  choices: {
    index: number;
    message: { role: "assistant"; content: string | null; refusal: null; tool_calls?: ChatToolCallOut[]; images?: ChatImage[] };
    logprobs: null;
    finish_reason: ChatFinishReason;
  }[];
  usage?: ChatUsage;
};

export interface GeminiToChatOptions {
  /** The model ID the client asked for. */
  publicModel: string;
}

/** What one candidate's parts (or one streamed chunk's) say in chat's terms. */
export interface CandidateOutput {
  text: string;
  /** Calls without ids yet: the caller numbers them within its answer (chatToolCall). */
  calls: GeminiCall[];
  images: ChatImage[];
}

/** A function call part: its name, its arguments as chat's JSON text, and its thought signature if any. */
export interface GeminiCall {
  name: string;
  arguments: string;
  signature: string | undefined;
}

const IMAGE = /^image\//i;

/**
 * The parts of a candidate's content: the text of its non-thought parts, its function calls, its images (inline
 * bytes as data: URIs, image file links as they are: the route delivers both by the validated path). Other
 * media and code parts are dropped.
 */
export function candidateOutput(content: unknown): CandidateOutput {
  const out: CandidateOutput = { text: "", calls: [], images: [] };
  for (const item of asArray(asObject(content)?.parts)) {
    const part = asObject(item);
    if (!part || part.thought === true) continue;
    const text = asString(part.text);
    if (text !== undefined) out.text += text;
    const call = asObject(part.functionCall);
    const name = asString(call?.name);
    if (call && name)
      out.calls.push({
        name,
        arguments: JSON.stringify(asObject(call.args) ?? {}),
        signature: asString(part.thoughtSignature) || undefined,
      });
    const inline = asObject(part.inlineData);
    const mime = asString(inline?.mimeType);
    const data = asString(inline?.data);
    if (mime && data !== undefined && IMAGE.test(mime)) out.images.push(image(`data:${mime};base64,${data}`));
    const file = asObject(part.fileData);
    const uri = asString(file?.fileUri);
    if (uri && IMAGE.test(asString(file?.mimeType) ?? "")) out.images.push(image(uri));
  }
  return out;
}

const image = (url: string): ChatImage => ({ type: "image_url", image_url: { url } });

/** A call as chat writes it, with its id. */
export function chatToolCall(id: string, call: GeminiCall): ChatToolCallOut {
  const out: ChatToolCallOut = { id, type: "function", function: { name: call.name, arguments: call.arguments } };
  if (call.signature) out.extra_content = { google: { thought_signature: call.signature } };
  return out;
}

/**
 * Gemini finishReason → chat finish_reason. A turn that called functions ends with STOP in Gemini and with
 * `tool_calls` in chat. Every filter (safety, recitation, blocklists, prohibited content, personal data, image
 * safety) is `content_filter`; chat has no name for the other reasons (OTHER, LANGUAGE, MALFORMED_FUNCTION_CALL,
 * NO_IMAGE, ...), so they end as `stop`.
 */
export function mapGeminiFinishReason(reason: unknown, calledFunctions: boolean): ChatFinishReason {
  switch (reason) {
    case "MAX_TOKENS":
      return "length";
    case "SAFETY":
    case "RECITATION":
    case "BLOCKLIST":
    case "PROHIBITED_CONTENT":
    case "SPII":
    case "IMAGE_SAFETY":
    case "IMAGE_PROHIBITED_CONTENT":
    case "IMAGE_RECITATION":
      return "content_filter";
    default:
      return calledFunctions ? "tool_calls" : "stop";
  }
}

/** A blocked prompt has no candidates: its answer is one empty choice ended by the content filter. */
export const isBlockedPrompt = (response: Record<string, unknown>): boolean =>
  asObject(response.promptFeedback)?.blockReason !== undefined && asArray(response.candidates).length === 0;

/** Chat's usage: thoughts are generated tokens (in completion_tokens) and shown as reasoning tokens. */
export function toChatUsage(usage: UsageReport, reasoningTokens = 0): ChatUsage {
  return {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
    prompt_tokens_details: { cached_tokens: usage.cachedTokens },
    completion_tokens_details: { reasoning_tokens: Math.min(reasoningTokens, usage.completionTokens) },
  };
}

/** The chat usage of a Gemini usageMetadata, or undefined when it has none a bill could be read from. */
export function chatUsageOf(usageMetadata: unknown): ChatUsage | undefined {
  const usage = convertGeminiUsage(usageMetadata);
  return usage ? toChatUsage(usage, tokenCount(asObject(usageMetadata)?.thoughtsTokenCount) ?? 0) : undefined;
}

/** `chatcmpl-` + Gemini's response id (its own characters, so logs of both sides line up), or a fresh id. */
export function chatCompletionId(responseId: unknown): string {
  const suffix = (asString(responseId) ?? "").replace(/[^A-Za-z0-9_-]/g, "");
  return `chatcmpl-${suffix || randomUUID().replaceAll("-", "")}`;
}

/** Call ids, derived from the answer's id and unique within it (Gemini links results to calls by name, never by these). */
export const toolCallId = (completionId: string, n: number) => `call_${completionId.slice("chatcmpl-".length)}_${n}`;

/**
 * The completion; its `usage` is the usageMetadata's, absent when the answer has none (the route then adds the
 * local count it bills).
 */
export function convertGeminiAnswerToChat(response: Record<string, unknown>, options: GeminiToChatOptions): ChatCompletionOut {
  const id = chatCompletionId(response.responseId);
  let calls = 0;
  const choices = asArray(response.candidates).flatMap((item, position) => {
    const candidate = asObject(item);
    if (!candidate) return [];
    const output = candidateOutput(candidate.content);
    const message: ChatCompletionOut["choices"][number]["message"] = { role: "assistant", content: output.text || null, refusal: null };
    if (output.calls.length > 0) message.tool_calls = output.calls.map((call) => chatToolCall(toolCallId(id, calls++), call));
    if (output.images.length > 0) message.images = output.images;
    const index = tokenCount(candidate.index) ?? position;
    return [{ index, message, logprobs: null, finish_reason: mapGeminiFinishReason(candidate.finishReason, output.calls.length > 0) }];
  });
  if (choices.length === 0 && isBlockedPrompt(response))
    choices.push({
      index: 0,
      message: { role: "assistant", content: null, refusal: null },
      logprobs: null,
      finish_reason: "content_filter",
    });
  const completion: ChatCompletionOut = {
    id,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model: options.publicModel,
    choices,
  };
  const usage = chatUsageOf(response.usageMetadata);
  if (usage) completion.usage = usage;
  return completion;
}
