import { z } from "zod";
import { validate } from "../server/body.js";
import { IDENTIFIER_MAX_CHARS, identifier, isStorableText } from "@model-gateway/worker-kit/wire/text";

// The chat completion request (spec "Chat completion request"). Only what the gateway acts on is typed;
// every other field (tools, response_format, temperature, vendor extensions…) passes through untouched and
// the provider decides (docs/api.md, "Unknown fields").
const MAX_TOKENS = 10_000_000;
const MAX_N = 128;

const message = z.looseObject({
  role: z.string().min(1),
  content: z.unknown().optional(),
});

const positiveInt = z.int().positive().max(MAX_TOKENS);

export const chatRequestSchema = z.looseObject({
  model: identifier(),
  messages: z.array(message).min(1),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  max_tokens: positiveInt.nullable().optional(),
  max_completion_tokens: positiveInt.nullable().optional(),
  n: z.int().min(1).max(MAX_N).nullable().optional(),
  tools: z.array(z.unknown()).nullable().optional(),
  modalities: z.array(z.string()).nullable().optional(),
});

export type ChatRequest = z.infer<typeof chatRequestSchema>;

// zod copies every object it checks (looseObject), which costs more than the rest of admission; a request of
// the usual shape is checked by hand instead and used as parsed. The hand check accepts a subset of what the
// schema accepts (test/unit/chat-schema.test.ts holds them side by side); everything else, valid or not, goes
// through zod, which also words the error.

/** A JSON object that zod would copy member for member (it drops an own `__proto__` key). */
const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v) && !Object.hasOwn(v, "__proto__");

const isAbsent = (v: unknown) => v === undefined || v === null;

const isIntOrAbsent = (v: unknown, max: number) => isAbsent(v) || (Number.isSafeInteger(v) && (v as number) >= 1 && (v as number) <= max);

function isCommonShape(body: unknown): body is ChatRequest {
  if (!isPlainObject(body)) return false;
  const { model, messages, stream, stream_options: streamOptions, tools, modalities } = body;
  if (typeof model !== "string" || model.length === 0 || model.length > IDENTIFIER_MAX_CHARS || !isStorableText(model)) return false;
  if (!Array.isArray(messages) || messages.length === 0) return false;
  for (const message of messages) {
    if (!isPlainObject(message) || typeof message.role !== "string" || message.role.length === 0) return false;
  }
  if (!isAbsent(stream) && typeof stream !== "boolean") return false;
  if (!isAbsent(streamOptions)) {
    if (!isPlainObject(streamOptions)) return false;
    if (streamOptions.include_usage !== undefined && typeof streamOptions.include_usage !== "boolean") return false;
  }
  if (!isAbsent(tools) && !Array.isArray(tools)) return false;
  if (!isAbsent(modalities) && !(Array.isArray(modalities) && modalities.every((m) => typeof m === "string"))) return false;
  return (
    isIntOrAbsent(body.max_tokens, MAX_TOKENS) && isIntOrAbsent(body.max_completion_tokens, MAX_TOKENS) && isIntOrAbsent(body.n, MAX_N)
  );
}

/** The parsed body as a chat request; a 400 naming the failing field otherwise. */
export function toChatRequest(body: unknown): ChatRequest {
  return isCommonShape(body) ? body : validate(chatRequestSchema, body);
}
