import { z } from "zod";

/**
 * The OpenAI Responses request body that ./openai-responses.ts validates. Kept apart from the route so that the
 * answer's shapes (./openai-responses-output.ts) read its type without importing the route that imports them.
 */

const tool = z
  .looseObject({ type: z.string(), name: z.string().min(1).optional() })
  .refine((t) => t.type !== "function" || t.name !== undefined, { message: "a function tool needs a name", path: ["name"] });

export const responsesRequest = z.object({
  model: z.string().min(1),
  input: z.union([z.string(), z.array(z.looseObject({ role: z.string().optional(), content: z.unknown().optional() })).min(1)]),
  instructions: z.string().nullish(),
  // The real API's own lower bound.
  max_output_tokens: z.number().int().min(16).nullish(),
  stream: z.boolean().nullish(),
  tools: z.array(tool).nullish(),
  tool_choice: z.union([z.string(), z.looseObject({ type: z.string(), name: z.string().optional() })]).nullish(),
  temperature: z.number().nullish(),
  top_p: z.number().nullish(),
  metadata: z.record(z.string(), z.string()).nullish(),
  parallel_tool_calls: z.boolean().nullish(),
});
export type ResponsesRequest = z.infer<typeof responsesRequest>;
