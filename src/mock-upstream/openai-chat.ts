import { createHash } from "node:crypto";
import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import type { HttpBindings } from "@hono/node-server";
import { Hono } from "hono";
import { streamSSE } from "hono/streaming";
import { z } from "zod";
import type { MockUpstreamEnv } from "./app.js";
import { openaiError } from "./faults.js";

/**
 * OpenAI `POST /v1/chat/completions`, deterministic: everything in the answer derives from sha256 of the model
 * and messages, so the same request gets byte-identical content, ids and usage (docs/mock-upstream.md).
 */

const WORDS = [
  "amber", "brook", "cedar", "delta", "ember", "fjord", "grove", "harbor",
  "iris", "juniper", "kestrel", "lumen", "meadow", "nimbus", "orchid", "pebble",
];
const CREATED = 1_735_689_600;
const SYSTEM_FINGERPRINT = "fp_mock0001";
const TOOL_ARGUMENTS = JSON.stringify({ location: "Paris" });
/** Tool-call arguments stream in slices this long, so clients have to reassemble them as with OpenAI. */
const ARGUMENT_SLICE = 8;

const maxTokens = z.number().int().min(1).nullish();
const chatRequest = z.object({
  model: z.string().min(1),
  messages: z.array(z.looseObject({ role: z.string(), content: z.unknown() })).min(1),
  max_tokens: maxTokens,
  max_completion_tokens: maxTokens,
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
  tools: z.array(z.looseObject({ type: z.string(), function: z.object({ name: z.string() }).optional() })).nullish(),
  tool_choice: z
    .union([z.string(), z.looseObject({ type: z.string(), function: z.object({ name: z.string() }).optional() })])
    .nullish(),
});
type ChatRequest = z.infer<typeof chatRequest>;
type Message = ChatRequest["messages"][number];

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
  finishReason: "stop" | "length" | "tool_calls";
  usage: ReturnType<typeof usageOf>;
}

/** Prompt rule: ceil(characters of all contents / 4) + 3 per message; non-string content counts as its JSON. */
function promptTokens(messages: Message[]): number {
  const chars = messages.reduce((sum, m) => {
    if (m.content === undefined || m.content === null) return sum;
    return sum + (typeof m.content === "string" ? m.content : JSON.stringify(m.content)).length;
  }, 0);
  return Math.ceil(chars / 4) + 3 * messages.length;
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

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.map((part: { type?: unknown; text?: unknown }) => (part?.type === "text" ? String(part.text) : "")).join(" ");
}

/** Which function to call, if any: a named tool_choice, else the first function when asked about weather. */
function chosenFunction(req: ChatRequest): string | undefined {
  const functions = (req.tools ?? []).flatMap((t) => (t.type === "function" && t.function ? [t.function.name] : []));
  const choice = req.tool_choice;
  if (functions.length === 0 || choice === "none") return undefined;
  if (typeof choice === "object" && choice?.function) return choice.function.name;
  const last = req.messages.at(-1);
  const asksWeather = last?.role === "user" && /\bweather\b/i.test(textOf(last.content));
  return asksWeather || choice === "required" ? functions[0] : undefined;
}

function plan(req: ChatRequest): Plan {
  const digest = createHash("sha256").update(JSON.stringify([req.model, req.messages])).digest();
  const hex = digest.toString("hex");
  const id = `chatcmpl-${hex.slice(0, 24)}`;
  const prompt = promptTokens(req.messages);

  const name = chosenFunction(req);
  if (name !== undefined) {
    const args = TOOL_ARGUMENTS;
    const pieces: string[] = [];
    for (let i = 0; i < args.length; i += ARGUMENT_SLICE) pieces.push(args.slice(i, i + ARGUMENT_SLICE));
    // Tool calls are never truncated by max tokens; their cost follows the prompt rule's chars / 4.
    const completion = Math.ceil((name.length + args.length) / 4);
    const toolCall = { id: `call_${hex.slice(24, 48)}`, name, arguments: args };
    return { id, pieces, toolCall, finishReason: "tool_calls", usage: usageOf(prompt, completion) };
  }

  // 1 + 30 hash bytes: one picks the natural length (5..30 words), one picks each word.
  const natural = 5 + (digest[0]! % 26);
  const cap = req.max_completion_tokens ?? req.max_tokens ?? natural;
  const count = Math.min(natural, cap);
  const words = Array.from({ length: count }, (_, i) => WORDS[digest[i + 1]! % WORDS.length]!);
  const pieces = words.map((w, i) => (i === 0 ? `Mock reply ${hex.slice(0, 8)}: ${w}` : ` ${w}`));
  return { id, pieces, finishReason: count < natural ? "length" : "stop", usage: usageOf(prompt, count) };
}

function jsonAnswer(req: ChatRequest, p: Plan, omitUsage: boolean) {
  const message = p.toolCall
    ? {
        role: "assistant",
        content: null,
        refusal: null,
        tool_calls: [
          { id: p.toolCall.id, type: "function", function: { name: p.toolCall.name, arguments: p.toolCall.arguments } },
        ],
        annotations: [],
      }
    : { role: "assistant", content: p.pieces.join(""), refusal: null, annotations: [] };
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

/** Cuts the TCP connection mid-response, as a crashing upstream or a dropped network path would. */
async function cutConnection(env: HttpBindings): Promise<void> {
  // destroy() discards unsent bytes: first let the chunks already written reach the wire.
  await new Promise((resolve) => setImmediate(resolve));
  const socket = env.incoming.socket;
  if (socket.writableLength > 0) await once(socket, "drain");
  socket.destroy();
}

export const openaiChatRoute = new Hono<MockUpstreamEnv>().post("/v1/chat/completions", async (c) => {
  const body: unknown = await c.req.json().catch(() => undefined);
  if (body === undefined) {
    return openaiError(c, 400, "We could not parse the JSON body of your request.", { code: "invalid_json" });
  }
  const parsed = chatRequest.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const param = issue?.path.join(".") || null;
    const where = param ? ` at '${param}'` : "";
    return openaiError(c, 400, `Invalid request${where}: ${issue?.message ?? "invalid body"}`, {
      param,
      code: "invalid_value",
    });
  }
  const req = parsed.data;
  const faults = c.get("faults");
  const p = plan(req);
  if (!req.stream) return c.json(jsonAnswer(req, p, faults.omitUsage));

  const withUsage = req.stream_options?.include_usage === true && !faults.omitUsage;
  const base = {
    id: p.id,
    object: "chat.completion.chunk",
    created: CREATED,
    model: req.model,
    service_tier: "default",
    system_fingerprint: SYSTEM_FINGERPRINT,
  };
  const choice = (delta: object, finishReason: Plan["finishReason"] | null = null) => ({
    index: 0,
    delta,
    logprobs: null,
    finish_reason: finishReason,
  });
  const firstDelta = p.toolCall
    ? {
        role: "assistant",
        content: null,
        tool_calls: [{ index: 0, id: p.toolCall.id, type: "function", function: { name: p.toolCall.name, arguments: "" } }],
      }
    : { role: "assistant", content: "" };
  const pieceDelta = (piece: string) =>
    p.toolCall ? { tool_calls: [{ index: 0, function: { arguments: piece } }] } : { content: piece };
  const sent = faults.dropAfter === undefined ? p.pieces : p.pieces.slice(0, faults.dropAfter);

  return streamSSE(c, async (stream) => {
    let first = true;
    // Returns false once the client has gone, so the loop stops producing.
    const send = async (chunk: object): Promise<boolean> => {
      if (!first && faults.chunkDelayMs) {
        await sleep(faults.chunkDelayMs, undefined, { signal: c.req.raw.signal }).catch(() => {});
      }
      first = false;
      if (stream.aborted) return false;
      await stream.writeSSE({ data: JSON.stringify(chunk) });
      return true;
    };
    // OpenAI sends `usage: null` on every chunk but the last when usage was asked for.
    const chunk = (choices: object[]) => ({ ...base, choices, ...(withUsage ? { usage: null } : {}) });

    if (!(await send(chunk([choice(firstDelta)])))) return;
    for (const piece of sent) if (!(await send(chunk([choice(pieceDelta(piece))])))) return;
    if (faults.dropAfter !== undefined) return cutConnection(c.env);
    if (!(await send(chunk([choice({}, p.finishReason)])))) return;
    if (withUsage && !(await send({ ...base, choices: [], usage: p.usage }))) return;
    await stream.writeSSE({ data: "[DONE]" });
  });
});
