import { z } from "zod";
import { openUnion, openUnionOn, stringOrArray } from "../schema-helpers.js";

// The OpenAI chat request as a translation into another protocol reads it (reference: CreateChatCompletionRequest
// of the OpenAI document). The chat route itself checks only what it acts on and forwards the rest to chat
// targets; a translation must understand what it rewrites, so the fields it reads are checked field by field,
// with errors naming the exact field. Unknown fields, roles, part kinds and tool kinds pass unchanged (the
// translation drops them: docs/translation.md).

const record = z.record(z.string(), z.unknown());

const textPart = z.looseObject({ type: z.literal("text"), text: z.string() });
const imagePart = z.looseObject({
  type: z.literal("image_url"),
  image_url: z.looseObject({ url: z.string().min(1), detail: z.string().optional() }),
});
const audioPart = z.looseObject({
  type: z.literal("input_audio"),
  input_audio: z.looseObject({ data: z.string().min(1), format: z.enum(["wav", "mp3"]) }),
});
const filePart = z.looseObject({
  type: z.literal("file"),
  file: z.looseObject({ file_data: z.string().min(1).optional(), file_id: z.string().optional(), filename: z.string().optional() }),
});
const refusalPart = z.looseObject({ type: z.literal("refusal"), refusal: z.string() });

const textContent = stringOrArray(openUnion({ text: textPart }), "content must be a string or an array of text parts");

const toolCall = openUnion({
  function: z.looseObject({
    type: z.literal("function"),
    id: z.string().min(1),
    function: z.looseObject({ name: z.string().min(1), arguments: z.string() }),
  }),
});

const systemMessage = z.looseObject({ role: z.enum(["system", "developer"]), content: textContent });
const userMessage = z.looseObject({
  role: z.literal("user"),
  content: stringOrArray(
    openUnion({ text: textPart, image_url: imagePart, input_audio: audioPart, file: filePart }),
    "content must be a string or an array of content parts",
  ),
});
const assistantMessage = z.looseObject({
  role: z.literal("assistant"),
  content: stringOrArray(openUnion({ text: textPart, refusal: refusalPart }), "content must be a string or an array of text parts")
    .nullable()
    .optional(),
  refusal: z.string().nullable().optional(),
  tool_calls: z.array(toolCall).nullable().optional(),
});
const toolMessage = z.looseObject({ role: z.literal("tool"), tool_call_id: z.string().min(1), content: textContent });

const message = openUnionOn("role", {
  system: systemMessage,
  developer: systemMessage,
  user: userMessage,
  assistant: assistantMessage,
  tool: toolMessage,
});

const tool = openUnion({
  function: z.looseObject({
    type: z.literal("function"),
    function: z.looseObject({
      name: z.string().min(1),
      description: z.string().optional(),
      parameters: record.optional(),
    }),
  }),
});

const namedFunction = z.looseObject({ type: z.literal("function"), function: z.looseObject({ name: z.string().min(1) }) });

const toolChoice = z.union([
  z.enum(["none", "auto", "required"]),
  openUnion({
    function: namedFunction,
    allowed_tools: z.looseObject({
      type: z.literal("allowed_tools"),
      allowed_tools: z.looseObject({ mode: z.enum(["auto", "required"]), tools: z.array(openUnion({ function: namedFunction })) }),
    }),
  }),
]);

const responseFormat = openUnion({
  text: z.looseObject({ type: z.literal("text") }),
  json_object: z.looseObject({ type: z.literal("json_object") }),
  json_schema: z.looseObject({
    type: z.literal("json_schema"),
    json_schema: z.looseObject({ name: z.string().min(1), schema: record.optional() }),
  }),
});

const optional = <T extends z.ZodType>(schema: T) => schema.nullable().optional();

const requestFields = z.looseObject({
  messages: z.array(message).min(1),
  tools: optional(z.array(tool)),
  tool_choice: optional(toolChoice),
  max_tokens: optional(z.int().positive()),
  max_completion_tokens: optional(z.int().positive()),
  temperature: optional(z.number().min(0).max(2)),
  top_p: optional(z.number().min(0).max(1)),
  stop: optional(z.union([z.string(), z.array(z.string())])),
  n: optional(z.int().min(1)),
  seed: optional(z.int()),
  presence_penalty: optional(z.number().min(-2).max(2)),
  frequency_penalty: optional(z.number().min(-2).max(2)),
  response_format: optional(responseFormat),
  modalities: optional(z.array(z.string())),
});

/** Where a data: URI must carry base64, as inline bytes do in every other protocol. */
const BASE64_DATA_URI = /^data:[^;,]+(?:;[^;,]*)*;base64,/;
const HTTP_URL = /^https?:\/\//i;

type Issue = { message: string; path: (string | number)[] };

/** A link the translation can pass on: inline base64 bytes, or an http(s) URL the target fetches. */
function linkIssue(url: string, path: (string | number)[], what: string): Issue | null {
  if (BASE64_DATA_URI.test(url) || (what === "url" && HTTP_URL.test(url))) return null;
  const expected = what === "url" ? "a data: URI with base64 data, or an http(s) URL" : "a data: URI with base64 data";
  return { message: `must be ${expected}`, path };
}

/** What one message's parts and links break, in order; tool results must answer a call made before them. */
function messageIssues(messages: readonly Record<string, unknown>[]): Issue[] {
  const issues: Issue[] = [];
  const calls = new Set<string>();
  let turns = 0;
  messages.forEach((message, i) => {
    if (message.role === "user" || message.role === "assistant" || message.role === "tool") turns++;
    if (message.role === "user" && Array.isArray(message.content)) {
      (message.content as Record<string, unknown>[]).forEach((part, j) => {
        const at = ["messages", i, "content", j];
        if (part.type === "image_url") {
          const issue = linkIssue((part.image_url as { url: string }).url, [...at, "image_url", "url"], "url");
          if (issue) issues.push(issue);
        }
        const fileData = part.type === "file" ? (part.file as { file_data?: string }).file_data : undefined;
        if (fileData !== undefined) {
          const issue = linkIssue(fileData, [...at, "file", "file_data"], "file_data");
          if (issue) issues.push(issue);
        }
      });
    }
    if (message.role === "assistant" && Array.isArray(message.tool_calls)) {
      for (const call of message.tool_calls as Record<string, unknown>[]) if (typeof call.id === "string") calls.add(call.id);
    }
    if (message.role === "tool" && !calls.has(message.tool_call_id as string))
      issues.push({
        message: "must be the id of a tool call of an earlier assistant message (a Gemini target links results to calls by name)",
        path: ["messages", i, "tool_call_id"],
      });
  });
  if (turns === 0) issues.push({ message: "must hold a user, assistant or tool message (a Gemini target needs one)", path: ["messages"] });
  return issues;
}

export const chatTranslationSchema = requestFields.superRefine((request, ctx) => {
  for (const issue of messageIssues(request.messages as Record<string, unknown>[]))
    ctx.addIssue({ code: "custom", message: issue.message, path: issue.path });
});

export type ChatTranslationRequest = z.infer<typeof chatTranslationSchema>;
export type ChatSystemMessage = z.infer<typeof systemMessage>;
export type ChatUserMessage = z.infer<typeof userMessage>;
export type ChatAssistantMessage = z.infer<typeof assistantMessage>;
export type ChatToolMessage = z.infer<typeof toolMessage>;
