import { z } from "zod";
import { identifier } from "@model-gateway/worker-kit/wire/text";
import { openUnion, stringOrArray } from "../schema-helpers.js";

// The Anthropic Messages request as the gateway accepts it (reference: CreateMessageParams of the Anthropic
// OpenAPI document). Known shapes are checked field by field; unknown fields, block kinds and tool kinds pass
// unchanged, so a native passthrough forwards what a newer client sends. Stricter than the reference where the
// API itself is: max_tokens ≥ 1 and at least one message.

const record = z.record(z.string(), z.unknown());

const textBlock = z.looseObject({ type: z.literal("text"), text: z.string() });

const imageSource = openUnion({
  base64: z.looseObject({ type: z.literal("base64"), media_type: z.string().min(1), data: z.string().min(1) }),
  url: z.looseObject({ type: z.literal("url"), url: z.string().min(1) }),
});
const imageBlock = z.looseObject({ type: z.literal("image"), source: imageSource });

const toolUseBlock = z.looseObject({ type: z.literal("tool_use"), id: z.string().min(1), name: z.string().min(1), input: record });

const toolResultBlock = z.looseObject({
  type: z.literal("tool_result"),
  tool_use_id: z.string().min(1),
  content: stringOrArray(
    openUnion({ text: textBlock, image: imageBlock }),
    "content must be a string or an array of content blocks",
  ).optional(),
  is_error: z.boolean().optional(),
});

const contentBlock = openUnion({ text: textBlock, image: imageBlock, tool_use: toolUseBlock, tool_result: toolResultBlock });

const message = z.looseObject({
  role: z.enum(["user", "assistant"]),
  content: stringOrArray(contentBlock, "content must be a string or an array of content blocks"),
});

/** Tools without `type` are custom tools; server tools (web search, bash, ...) have a type and no input_schema. */
const tool = openUnion(
  { custom: z.looseObject({ name: z.string().min(1), description: z.string().optional(), input_schema: record }) },
  "custom",
);

const parallel = { disable_parallel_tool_use: z.boolean().optional() };
const toolChoice = z.discriminatedUnion("type", [
  z.looseObject({ type: z.literal("auto"), ...parallel }),
  z.looseObject({ type: z.literal("any"), ...parallel }),
  z.looseObject({ type: z.literal("tool"), name: z.string().min(1), ...parallel }),
  z.looseObject({ type: z.literal("none") }),
]);

export const anthropicMessagesRequestSchema = z.looseObject({
  model: identifier(),
  max_tokens: z.int().positive(),
  messages: z.array(message).min(1),
  system: stringOrArray(textBlock, "system must be a string or an array of text blocks").optional(),
  stop_sequences: z.array(z.string()).optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().min(0).max(1).optional(),
  top_k: z.int().nonnegative().optional(),
  stream: z.boolean().optional(),
  tools: z.array(tool).optional(),
  tool_choice: toolChoice.optional(),
  metadata: z.looseObject({ user_id: z.string().nullable().optional() }).optional(),
});

export type AnthropicMessagesRequest = z.infer<typeof anthropicMessagesRequestSchema>;
export type AnthropicContentBlock = z.infer<typeof contentBlock>;
export type AnthropicTextBlock = z.infer<typeof textBlock>;
export type AnthropicImageBlock = z.infer<typeof imageBlock>;
export type AnthropicToolUseBlock = z.infer<typeof toolUseBlock>;
export type AnthropicToolResultBlock = z.infer<typeof toolResultBlock>;
