import { z } from "zod";

/**
 * The Anthropic Messages request body that ./anthropic-messages.ts validates. Kept apart from the route so that
 * the answer's shapes (./anthropic-messages-output.ts) read its type without importing the route that imports them.
 */

/** The fields each known content block type needs; other block types (document, thinking, …) pass as sent. */
const BLOCK_FIELDS: Record<string, string[]> = {
  text: ["text"],
  image: ["source"],
  tool_use: ["id", "name", "input"],
  tool_result: ["tool_use_id"],
};

const block = z.looseObject({ type: z.string() }).superRefine((b, ctx) => {
  for (const field of BLOCK_FIELDS[b.type] ?? []) {
    if (!(field in b)) ctx.addIssue({ code: "custom", message: "Field required", path: [field] });
  }
});

export const messagesRequest = z.object({
  model: z.string().min(1),
  max_tokens: z.number().int().min(1),
  messages: z.array(z.looseObject({ role: z.enum(["user", "assistant"]), content: z.union([z.string(), z.array(block).min(1)]) })).min(1),
  system: z.union([z.string(), z.array(z.looseObject({ type: z.literal("text"), text: z.string() }))]).optional(),
  // Client tools have no type (or "custom"); server tools (web search, …) have a versioned type.
  tools: z.array(z.looseObject({ name: z.string().min(1), type: z.string().optional() })).optional(),
  tool_choice: z.looseObject({ type: z.enum(["auto", "any", "tool", "none"]), name: z.string().optional() }).optional(),
  stream: z.boolean().optional(),
});
export type MessagesRequest = z.infer<typeof messagesRequest>;
