import type { ChatContentPart, ChatMessage, ChatRequestBody, ChatTool, ChatToolCall, ChatToolChoice } from "../openai/chat-types.js";
import { convertGeminiSchema } from "./convert-gemini-schema.js";
import type { GeminiContent, GeminiGenerateContentRequest, GeminiPart } from "./generate-content-request-schema.js";

// Gemini GenerateContentRequest → OpenAI chat request, for a Gemini client whose model is served by an
// OpenAI-chat upstream. Parts and fields with no chat counterpart are dropped (docs/translation.md).

export interface GenerateContentToChatOptions {
  /** The model from the URL (Gemini bodies carry none). */
  model: string;
  /** streamGenerateContent: the chat request streams and asks for usage. */
  stream: boolean;
}

const JOIN = "\n\n";

/** Images only: chat has no generic file part that every OpenAI-compatible server takes. */
function mediaPart(part: GeminiPart): ChatContentPart | null {
  const inline = part.inlineData;
  if (inline?.mimeType.startsWith("image/"))
    return { type: "image_url", image_url: { url: `data:${inline.mimeType};base64,${inline.data}` } };
  const file = part.fileData;
  if (file?.mimeType?.startsWith("image/") && /^https?:\/\//.test(file.fileUri))
    return { type: "image_url", image_url: { url: file.fileUri } };
  return null;
}

/**
 * Gemini links a function response to its call by name (and, newer, an optional id); chat needs ids. Calls
 * without an id get `call_N`, and a response without one takes the oldest unanswered call of its name.
 */
function callIds() {
  let next = 0;
  const unanswered = new Map<string, string[]>();
  return {
    call(name: string, id: string | undefined): string {
      const callId = id ?? `call_${next++}`;
      unanswered.set(name, [...(unanswered.get(name) ?? []), callId]);
      return callId;
    },
    response(name: string, id: string | undefined): string {
      const queue = unanswered.get(name) ?? [];
      const callId = id ?? queue[0] ?? `call_${next++}`;
      const at = queue.indexOf(callId);
      if (at >= 0) queue.splice(at, 1);
      return callId;
    },
  };
}

/** A model turn: its text (thoughts left out) becomes the content, its function calls the tool calls. */
function modelMessage(content: GeminiContent, ids: ReturnType<typeof callIds>): ChatMessage[] {
  const text = content.parts
    .filter((p) => p.thought !== true && typeof p.text === "string")
    .map((p) => p.text)
    .join("");
  const toolCalls: ChatToolCall[] = [];
  for (const part of content.parts) {
    const call = part.functionCall;
    if (call)
      toolCalls.push({
        id: ids.call(call.name, call.id),
        type: "function",
        function: { name: call.name, arguments: JSON.stringify(call.args ?? {}) },
      });
  }
  if (toolCalls.length > 0) return [{ role: "assistant", content: text || null, tool_calls: toolCalls }];
  return text ? [{ role: "assistant", content: text }] : [];
}

/** A user turn: function responses become tool messages, first, then the rest as one user message. */
function userMessages(content: GeminiContent, ids: ReturnType<typeof callIds>): ChatMessage[] {
  const out: ChatMessage[] = [];
  const parts: ChatContentPart[] = [];
  for (const part of content.parts) {
    const response = part.functionResponse;
    if (response)
      out.push({ role: "tool", tool_call_id: ids.response(response.name, response.id), content: JSON.stringify(response.response) });
    else if (typeof part.text === "string" && part.thought !== true) parts.push({ type: "text", text: part.text });
    else {
      const media = mediaPart(part);
      if (media) parts.push(media);
    }
  }
  if (parts.length === 1 && parts[0]!.type === "text") out.push({ role: "user", content: parts[0]!.text });
  else if (parts.length > 0) out.push({ role: "user", content: parts });
  return out;
}

function chatTools(tools: GeminiGenerateContentRequest["tools"]): ChatTool[] {
  return (tools ?? []).flatMap((tool) =>
    (tool.functionDeclarations ?? []).map((fn): ChatTool => {
      const parameters = fn.parametersJsonSchema ?? (fn.parameters ? convertGeminiSchema(fn.parameters) : undefined);
      const fnOut: ChatTool["function"] = { name: fn.name };
      if (fn.description !== undefined) fnOut.description = fn.description;
      if (parameters) fnOut.parameters = parameters;
      return { type: "function", function: fnOut };
    }),
  );
}

function chatToolChoice(config: GeminiGenerateContentRequest["toolConfig"]): ChatToolChoice | undefined {
  const calling = config?.functionCallingConfig;
  switch (calling?.mode) {
    case "AUTO":
    case "VALIDATED":
      return "auto";
    case "NONE":
      return "none";
    case "ANY": {
      const names = calling.allowedFunctionNames ?? [];
      return names.length === 1 ? { type: "function", function: { name: names[0]! } } : "required";
    }
    default:
      return undefined;
  }
}

function responseFormat(config: NonNullable<GeminiGenerateContentRequest["generationConfig"]>): ChatRequestBody["response_format"] {
  if (config.responseMimeType !== "application/json") return undefined;
  const schema = config.responseJsonSchema ?? (config.responseSchema ? convertGeminiSchema(config.responseSchema) : undefined);
  return schema ? { type: "json_schema", json_schema: { name: "response", schema } } : { type: "json_object" };
}

export function convertGenerateContentToChat(
  request: GeminiGenerateContentRequest,
  options: GenerateContentToChatOptions,
): ChatRequestBody {
  const messages: ChatMessage[] = [];
  const system = (request.systemInstruction?.parts ?? [])
    .map((p) => p.text)
    .filter((t): t is string => typeof t === "string" && t !== "")
    .join(JOIN);
  if (system) messages.push({ role: "system", content: system });
  const ids = callIds();
  for (const content of request.contents)
    messages.push(...(content.role === "model" ? modelMessage(content, ids) : userMessages(content, ids)));

  const body: ChatRequestBody = { model: options.model, messages };
  const config = request.generationConfig;
  if (config) {
    if (config.maxOutputTokens !== undefined) body.max_tokens = config.maxOutputTokens;
    if (config.temperature !== undefined) body.temperature = config.temperature;
    if (config.topP !== undefined) body.top_p = config.topP;
    if (config.candidateCount !== undefined && config.candidateCount > 1) body.n = config.candidateCount;
    if (config.stopSequences?.length) body.stop = config.stopSequences;
    if (config.seed !== undefined) body.seed = config.seed;
    if (config.presencePenalty !== undefined) body.presence_penalty = config.presencePenalty;
    if (config.frequencyPenalty !== undefined) body.frequency_penalty = config.frequencyPenalty;
    const format = responseFormat(config);
    if (format) body.response_format = format;
  }
  const tools = chatTools(request.tools);
  if (tools.length > 0) {
    body.tools = tools;
    const choice = chatToolChoice(request.toolConfig);
    if (choice) body.tool_choice = choice;
  }
  // Usage in the stream is the OpenAI adapter's to ask for: it knows whether the provider takes stream_options.
  if (options.stream) body.stream = true;
  return body;
}
