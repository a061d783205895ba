import { Hono } from "hono";
import { z } from "zod";
import type { MockUpstreamEnv } from "./context.js";
import { openai, parseBody } from "./dialects.js";
import {
  argumentSlices,
  chosenFunction,
  digestOf,
  promptTokens,
  replyOf,
  TOOL_ARGUMENTS,
  type ToolChoice,
  textOf,
  toolCallTokens,
} from "./mock-text.js";
import { jsonEvent, type MockEvent, playEvents } from "./sse.js";
import { asksForImage, CHAT_IMAGE_TOKENS, chatImages } from "./openai-chat-images.js";

/**
 * OpenAI `POST /v1/chat/completions`, deterministic: everything in the answer derives from sha256 of the model
 * and messages, so the same request gets byte-identical content, ids and usage (docs/mock-upstream.md).
 */

const CREATED = 1_735_689_600;
const SYSTEM_FINGERPRINT = "fp_mock0001";

const maxTokens = z.number().int().min(1).nullish();
const chatRequest = z.object({
  model: z.string().min(1),
  // An assistant turn with tool calls may leave `content` out.
  messages: z.array(z.looseObject({ role: z.string(), content: z.unknown().optional() })).min(1),
  max_tokens: maxTokens,
  max_completion_tokens: maxTokens,
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
  tools: z.array(z.looseObject({ type: z.string(), function: z.object({ name: z.string() }).optional() })).nullish(),
  tool_choice: z.union([z.string(), z.looseObject({ type: z.string(), function: z.object({ name: z.string() }).optional() })]).nullish(),
  modalities: z.array(z.string()).nullish(),
});
type ChatRequest = z.infer<typeof chatRequest>;

interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** What to answer, independent of JSON or SSE delivery: the stream's deltas concatenate to the JSON answer. */
interface Plan {
  id: string;
  /** Content deltas (text), or argument slices (tool call). */
  pieces: string[];
  toolCall?: ToolCall;
  /** The answer's `images` (a text answer to a request whose `modalities` has "image"). */
  images?: object[];
  finishReason: "stop" | "length" | "tool_calls";
  usage: ReturnType<typeof usageOf>;
}

function usageOf(prompt: number, completion: number) {
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    prompt_tokens_details: { cached_tokens: 0 },
    completion_tokens_details: { reasoning_tokens: 0 },
  };
}

function toolChoiceOf(choice: ChatRequest["tool_choice"]): ToolChoice {
  if (typeof choice === "object" && choice?.function) return { name: choice.function.name };
  return choice === "none" || choice === "required" ? choice : "auto";
}

function plan(req: ChatRequest, images: (id: string) => object[]): Plan {
  const digest = digestOf([req.model, req.messages]);
  const hex = digest.toString("hex");
  const id = `chatcmpl-${hex.slice(0, 24)}`;
  const prompt = promptTokens(req.messages.map((m) => m.content));

  const functions = (req.tools ?? []).flatMap((t) => (t.type === "function" && t.function ? [t.function.name] : []));
  const last = req.messages.at(-1);
  const name = chosenFunction(functions, toolChoiceOf(req.tool_choice), last?.role === "user" ? textOf(last.content) : undefined);
  if (name !== undefined) {
    // Tool calls are never truncated by max tokens.
    const args = JSON.stringify(TOOL_ARGUMENTS);
    const toolCall = { id: `call_${hex.slice(24, 48)}`, name, arguments: args };
    const usage = usageOf(prompt, toolCallTokens(name, args));
    return { id, pieces: argumentSlices(args), toolCall, finishReason: "tool_calls", usage };
  }

  const reply = replyOf(digest, req.max_completion_tokens ?? req.max_tokens);
  const finishReason = reply.truncated ? "length" : "stop";
  if (!asksForImage(req.modalities)) return { id, pieces: reply.pieces, finishReason, usage: usageOf(prompt, reply.words) };
  return {
    id,
    pieces: reply.pieces,
    images: images(hex.slice(0, 24)),
    finishReason,
    usage: usageOf(prompt, reply.words + CHAT_IMAGE_TOKENS),
  };
}

function jsonAnswer(req: ChatRequest, p: Plan, omitUsage: boolean) {
  const message = p.toolCall
    ? {
        role: "assistant",
        content: null,
        refusal: null,
        tool_calls: [{ id: p.toolCall.id, type: "function", function: { name: p.toolCall.name, arguments: p.toolCall.arguments } }],
        annotations: [],
      }
    : { role: "assistant", content: p.pieces.join(""), refusal: null, annotations: [], ...(p.images ? { images: p.images } : {}) };
  return {
    id: p.id,
    object: "chat.completion",
    created: CREATED,
    model: req.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: p.finishReason }],
    service_tier: "default",
    system_fingerprint: SYSTEM_FINGERPRINT,
    ...(omitUsage ? {} : { usage: p.usage }),
  };
}

/** Role chunk, one chunk per piece, finish chunk, optional usage chunk, `[DONE]`. */
function streamEvents(req: ChatRequest, p: Plan, omitUsage: boolean): MockEvent[] {
  const withUsage = req.stream_options?.include_usage === true && !omitUsage;
  const base = {
    id: p.id,
    object: "chat.completion.chunk",
    created: CREATED,
    model: req.model,
    service_tier: "default",
    system_fingerprint: SYSTEM_FINGERPRINT,
  };
  // OpenAI sends `usage: null` on every chunk but the last when usage was asked for.
  const chunk = (delta: object, finishReason: Plan["finishReason"] | null = null) => ({
    ...base,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
    ...(withUsage ? { usage: null } : {}),
  });
  const firstDelta = p.toolCall
    ? {
        role: "assistant",
        content: null,
        tool_calls: [{ index: 0, id: p.toolCall.id, type: "function", function: { name: p.toolCall.name, arguments: "" } }],
      }
    : { role: "assistant", content: "" };
  const pieceDelta = (piece: string) => (p.toolCall ? { tool_calls: [{ index: 0, function: { arguments: piece } }] } : { content: piece });

  return [
    jsonEvent(chunk(firstDelta)),
    ...p.pieces.map((piece) => jsonEvent(chunk(pieceDelta(piece)), { content: true })),
    ...(p.images ? [jsonEvent(chunk({ images: p.images }))] : []),
    jsonEvent(chunk({}, p.finishReason)),
    ...(withUsage ? [jsonEvent({ ...base, choices: [], usage: p.usage })] : []),
    { data: "[DONE]" },
  ];
}

export const openaiChatRoute = new Hono<MockUpstreamEnv>().post("/v1/chat/completions", async (c) => {
  const req = await parseBody(c, openai, chatRequest);
  if (req instanceof Response) return req;
  const { omitUsage } = c.get("faults");
  const { image } = c.get("faults");
  const origin = new URL(c.req.url).origin;
  const p = plan(req, (id) => chatImages(id, image, origin));
  return req.stream ? playEvents(c, streamEvents(req, p, omitUsage)) : c.json(jsonAnswer(req, p, omitUsage));
});
