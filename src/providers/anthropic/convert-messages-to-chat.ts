import type { ChatContentPart, ChatMessage, ChatRequestBody, ChatTool, ChatToolCall, ChatToolChoice } from "../openai/chat-types.js";
import type {
  AnthropicContentBlock,
  AnthropicImageBlock,
  AnthropicMessagesRequest,
  AnthropicTextBlock,
  AnthropicToolResultBlock,
  AnthropicToolUseBlock,
} from "./messages-request-schema.js";

// Anthropic Messages request → OpenAI chat request, for an Anthropic client whose model is served by an
// OpenAI-chat upstream. Fields and block kinds with no chat counterpart are dropped, never guessed at
// (docs/translation.md lists them). Text blocks that must become one string are joined with a blank line.

const JOIN = "\n\n";

const texts = (blocks: readonly { type: string }[]): string =>
  blocks
    .filter((b): b is AnthropicTextBlock => b.type === "text")
    .map((b) => b.text)
    .join(JOIN);

/** base64 sources become data URLs; URL sources stay URLs; other sources (files) have no chat form. */
function imagePart(block: AnthropicImageBlock): ChatContentPart | null {
  const source = block.source;
  if (source.type === "base64") {
    const { media_type, data } = source as { media_type: string; data: string };
    return { type: "image_url", image_url: { url: `data:${media_type};base64,${data}` } };
  }
  if (source.type === "url") return { type: "image_url", image_url: { url: (source as { url: string }).url } };
  return null;
}

function contentPart(block: { type: string }): ChatContentPart | null {
  if (block.type === "text") return { type: "text", text: (block as AnthropicTextBlock).text };
  if (block.type === "image") return imagePart(block as AnthropicImageBlock);
  return null;
}

/**
 * A user turn: its tool results become `tool` messages, first (chat wants them right after the assistant's
 * tool calls), then the rest as one user message. Chat tool messages hold text only, so images inside a tool
 * result move into that user message.
 */
function userMessages(content: string | AnthropicContentBlock[]): ChatMessage[] {
  if (typeof content === "string") return [{ role: "user", content }];
  const out: ChatMessage[] = [];
  const parts: ChatContentPart[] = [];
  for (const block of content) {
    if (block.type !== "tool_result") {
      const part = contentPart(block);
      if (part) parts.push(part);
      continue;
    }
    const result = block as AnthropicToolResultBlock;
    const inner = result.content ?? "";
    out.push({ role: "tool", tool_call_id: result.tool_use_id, content: typeof inner === "string" ? inner : texts(inner) });
    if (typeof inner === "string") continue;
    for (const b of inner) {
      const image = b.type === "image" ? imagePart(b as AnthropicImageBlock) : null;
      if (image) parts.push(image);
    }
  }
  if (parts.length === 1 && parts[0]!.type === "text") out.push({ role: "user", content: parts[0]!.text });
  else if (parts.length > 0) out.push({ role: "user", content: parts });
  return out;
}

/** An assistant turn: text blocks become its content, tool_use blocks its tool calls; thinking is dropped. */
function assistantMessages(content: string | AnthropicContentBlock[]): ChatMessage[] {
  if (typeof content === "string") return [{ role: "assistant", content }];
  const text = texts(content);
  const toolCalls: ChatToolCall[] = content
    .filter((b): b is AnthropicToolUseBlock => b.type === "tool_use")
    .map((b) => ({ id: b.id, type: "function", function: { name: b.name, arguments: JSON.stringify(b.input) } }));
  if (toolCalls.length > 0) return [{ role: "assistant", content: text || null, tool_calls: toolCalls }];
  return text ? [{ role: "assistant", content: text }] : [];
}

/** Custom tools become function tools; Anthropic's server tools (web search, bash, ...) have no chat form. */
function chatTools(tools: AnthropicMessagesRequest["tools"]): ChatTool[] {
  const out: ChatTool[] = [];
  for (const tool of tools ?? []) {
    if (tool.type !== undefined && tool.type !== "custom") continue;
    const { name, description, input_schema } = tool as { name: string; description?: string; input_schema: Record<string, unknown> };
    out.push({
      type: "function",
      function: description === undefined ? { name, parameters: input_schema } : { name, description, parameters: input_schema },
    });
  }
  return out;
}

function chatToolChoice(choice: NonNullable<AnthropicMessagesRequest["tool_choice"]>): ChatToolChoice {
  switch (choice.type) {
    case "auto":
      return "auto";
    case "any":
      return "required";
    case "none":
      return "none";
    case "tool":
      return { type: "function", function: { name: choice.name } };
  }
}

/** The chat request for an Anthropic request; `model` stays the client's (the route puts the upstream's in). */
export function convertMessagesToChat(request: AnthropicMessagesRequest): ChatRequestBody {
  const messages: ChatMessage[] = [];
  const system = typeof request.system === "string" ? request.system : texts(request.system ?? []);
  if (system) messages.push({ role: "system", content: system });
  for (const message of request.messages) {
    messages.push(...(message.role === "user" ? userMessages(message.content) : assistantMessages(message.content)));
  }
  const body: ChatRequestBody = { model: request.model, messages, max_tokens: request.max_tokens };
  if (request.temperature !== undefined) body.temperature = request.temperature;
  if (request.top_p !== undefined) body.top_p = request.top_p;
  if (request.stop_sequences?.length) body.stop = request.stop_sequences;
  const tools = chatTools(request.tools);
  // A tool_choice without tools is an error upstream; with Anthropic it only constrains the tools there are.
  if (tools.length > 0) {
    body.tools = tools;
    if (request.tool_choice) body.tool_choice = chatToolChoice(request.tool_choice);
    if (request.tool_choice?.type !== "none" && request.tool_choice?.disable_parallel_tool_use === true) body.parallel_tool_calls = false;
  }
  // Usage in the stream is the OpenAI adapter's to ask for: it knows whether the provider takes stream_options.
  if (request.stream === true) body.stream = true;
  return body;
}
