import { z } from "zod";

// The chat completion request (spec "Chat completion request"). Only what the gateway acts on is typed;
// every other field (tools, response_format, temperature, vendor extensions…) passes through untouched and
// the provider decides (docs/api.md, "Unknown fields").
const message = z.looseObject({
  role: z.string().min(1),
  content: z.unknown().optional(),
});

const positiveInt = z.int().positive().max(10_000_000);

export const chatRequestSchema = z.looseObject({
  model: z.string().min(1),
  messages: z.array(message).min(1),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  max_tokens: positiveInt.nullable().optional(),
  max_completion_tokens: positiveInt.nullable().optional(),
  n: z.int().min(1).max(128).nullable().optional(),
  tools: z.array(z.unknown()).nullable().optional(),
  modalities: z.array(z.string()).nullable().optional(),
});

export type ChatRequest = z.infer<typeof chatRequestSchema>;
