import type {
  ChatAssistantMessage,
  ChatSystemMessage,
  ChatToolMessage,
  ChatTranslationRequest,
  ChatUserMessage,
} from "../openai/chat-translation-schema.js";
import { parseToolArguments } from "../openai/read-chat-completion.js";

// OpenAI chat request → Gemini GenerateContentRequest, for a chat client whose model is served by a `gemini`
// target. The input passed chatTranslationSchema (its cross-field checks included), so nothing here throws;
// what Gemini cannot express is dropped (docs/translation.md, "OpenAI chat → Gemini").

export type GeminiRequestPart =
  | { text: string }
  | { inlineData: { mimeType: string; data: string } }
  | { fileData: { fileUri: string } }
  | { functionCall: { name: string; args: Record<string, unknown> }; thoughtSignature?: string }
  | { functionResponse: { name: string; response: Record<string, unknown> } };

export type GeminiRequestContent = { role: "user" | "model"; parts: GeminiRequestPart[] };

type FunctionDeclaration = { name: string; description?: string; parametersJsonSchema?: Record<string, unknown> };

type FunctionCallingConfig = { mode: "AUTO" | "ANY" | "NONE" | "VALIDATED"; allowedFunctionNames?: string[] };

export type GeminiRequestGenerationConfig = {
  maxOutputTokens?: number;
  temperature?: number;
  topP?: number;
  stopSequences?: string[];
  candidateCount?: number;
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  responseMimeType?: string;
  responseJsonSchema?: Record<string, unknown>;
  responseModalities?: ("TEXT" | "IMAGE")[];
};

export type GeminiRequest = {
  contents: GeminiRequestContent[];
  systemInstruction?: { parts: { text: string }[] };
  tools?: { functionDeclarations: FunctionDeclaration[] }[];
  toolConfig?: { functionCallingConfig: FunctionCallingConfig };
  generationConfig?: GeminiRequestGenerationConfig;
};

type Message = ChatTranslationRequest["messages"][number];

/** `data:<type>[;params];base64,<data>`: the only data URIs chatTranslationSchema lets through. */
const DATA_URI = /^data:([^;,]+)(?:;[^;,]*)*;base64,/;

/** A data: URI as inline bytes; null for anything else. */
export function inlineDataOf(uri: string): { mimeType: string; data: string } | null {
  const match = DATA_URI.exec(uri);
  return match ? { mimeType: match[1]!.toLowerCase(), data: uri.slice(match[0].length) } : null;
}

const textOf = (content: ChatSystemMessage["content"] | ChatToolMessage["content"]): string =>
  typeof content === "string" ? content : content.map((p) => (p.type === "text" ? (p as { text: string }).text : "")).join("");

/** Google's OpenAI-compatible API carries a call's thought signature here; a client sends the call back as it got it. */
function thoughtSignatureOf(call: Record<string, unknown>): string | undefined {
  const extra = call.extra_content as { google?: { thought_signature?: unknown } } | undefined;
  const signature = extra?.google?.thought_signature;
  return typeof signature === "string" && signature !== "" ? signature : undefined;
}

function userParts(message: ChatUserMessage): GeminiRequestPart[] {
  if (typeof message.content === "string") return [{ text: message.content }];
  const parts: GeminiRequestPart[] = [];
  for (const part of message.content) {
    switch (part.type) {
      case "text":
        parts.push({ text: (part as { text: string }).text });
        break;
      case "image_url": {
        const { url } = (part as { image_url: { url: string } }).image_url;
        const inline = inlineDataOf(url);
        parts.push(inline ? { inlineData: inline } : { fileData: { fileUri: url } });
        break;
      }
      case "input_audio": {
        const { data, format } = (part as { input_audio: { data: string; format: "wav" | "mp3" } }).input_audio;
        parts.push({ inlineData: { mimeType: `audio/${format}`, data } });
        break;
      }
      case "file": {
        // An OpenAI file ID means nothing to Gemini: only inline file data is sent.
        const data = (part as { file: { file_data?: string } }).file.file_data;
        const inline = data === undefined ? null : inlineDataOf(data);
        if (inline) parts.push({ inlineData: inline });
        break;
      }
    }
  }
  return parts;
}

function assistantParts(message: ChatAssistantMessage): GeminiRequestPart[] {
  const content = message.content;
  const text =
    typeof content === "string"
      ? content
      : (content ?? [])
          .map((p) => (p.type === "text" ? (p as { text: string }).text : p.type === "refusal" ? (p as { refusal: string }).refusal : ""))
          .join("");
  const parts: GeminiRequestPart[] = text ? [{ text }] : [];
  for (const call of message.tool_calls ?? []) {
    if (call.type !== "function") continue;
    const fn = (call as { function: { name: string; arguments: string } }).function;
    const part: GeminiRequestPart = { functionCall: { name: fn.name, args: parseToolArguments(fn.arguments) } };
    const signature = thoughtSignatureOf(call);
    if (signature) part.thoughtSignature = signature;
    parts.push(part);
  }
  return parts;
}

/** A tool result is text in chat and a Struct in Gemini: a JSON object is sent as itself, anything else as `{output}`. */
function functionResponse(name: string, content: string): GeminiRequestPart {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content);
  } catch {
    parsed = undefined;
  }
  const response =
    parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : { output: content };
  return { functionResponse: { name, response } };
}

/** The function names of the assistant's calls, by call id: a tool message names only the id, Gemini wants the name. */
function callNames(messages: readonly Message[]): Map<string, string> {
  const names = new Map<string, string>();
  for (const message of messages) {
    if (message.role !== "assistant") continue;
    for (const call of (message as ChatAssistantMessage).tool_calls ?? []) {
      if (call.type === "function") names.set(call.id as string, (call as { function: { name: string } }).function.name);
    }
  }
  return names;
}

/** Turns in order, consecutive turns of one role merged (a parallel call's results are one turn, as Gemini wants). */
function contentsOf(messages: readonly Message[]): GeminiRequestContent[] {
  const names = callNames(messages);
  const contents: GeminiRequestContent[] = [];
  const add = (role: "user" | "model", parts: GeminiRequestPart[]) => {
    if (parts.length === 0) return;
    const last = contents.at(-1);
    if (last?.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  for (const message of messages) {
    switch (message.role) {
      case "user":
        add("user", userParts(message as ChatUserMessage));
        break;
      case "assistant":
        add("model", assistantParts(message as ChatAssistantMessage));
        break;
      case "tool": {
        const tool = message as ChatToolMessage;
        add("user", [functionResponse(names.get(tool.tool_call_id)!, textOf(tool.content))]);
        break;
      }
    }
  }
  return contents;
}

function systemInstruction(messages: readonly Message[]): GeminiRequest["systemInstruction"] {
  const parts = messages
    .filter((m) => m.role === "system" || m.role === "developer")
    .map((m) => ({ text: textOf((m as ChatSystemMessage).content) }))
    .filter((p) => p.text !== "");
  return parts.length > 0 ? { parts } : undefined;
}

function declarations(tools: ChatTranslationRequest["tools"]): FunctionDeclaration[] {
  const out: FunctionDeclaration[] = [];
  for (const tool of tools ?? []) {
    if (tool.type !== "function") continue;
    const fn = (tool as { function: { name: string; description?: string; parameters?: Record<string, unknown> } }).function;
    const declaration: FunctionDeclaration = { name: fn.name };
    if (fn.description !== undefined) declaration.description = fn.description;
    if (fn.parameters !== undefined) declaration.parametersJsonSchema = fn.parameters;
    out.push(declaration);
  }
  return out;
}

function functionCalling(choice: ChatTranslationRequest["tool_choice"]): FunctionCallingConfig | undefined {
  if (choice === undefined || choice === null) return undefined;
  if (choice === "none") return { mode: "NONE" };
  if (choice === "auto") return { mode: "AUTO" };
  if (choice === "required") return { mode: "ANY" };
  if (choice.type === "function") return { mode: "ANY", allowedFunctionNames: [(choice as { function: { name: string } }).function.name] };
  if (choice.type === "allowed_tools") {
    const { mode, tools } = (
      choice as { allowed_tools: { mode: "auto" | "required"; tools: { type: string; function?: { name: string } }[] } }
    ).allowed_tools;
    const allowedFunctionNames = tools.flatMap((t) => (t.type === "function" && t.function ? [t.function.name] : []));
    // VALIDATED: text or a call limited to the names, as chat's `auto` over the allowed tools.
    return { mode: mode === "required" ? "ANY" : "VALIDATED", allowedFunctionNames };
  }
  return undefined;
}

function generationConfig(request: ChatTranslationRequest): GeminiRequestGenerationConfig | undefined {
  const config: GeminiRequestGenerationConfig = {};
  const maxTokens = request.max_completion_tokens ?? request.max_tokens;
  if (maxTokens != null) config.maxOutputTokens = maxTokens;
  if (request.temperature != null) config.temperature = request.temperature;
  if (request.top_p != null) config.topP = request.top_p;
  const stop = typeof request.stop === "string" ? [request.stop] : request.stop;
  if (stop && stop.length > 0) config.stopSequences = stop;
  if (request.n != null && request.n > 1) config.candidateCount = request.n;
  if (request.seed != null) config.seed = request.seed;
  if (request.presence_penalty != null) config.presencePenalty = request.presence_penalty;
  if (request.frequency_penalty != null) config.frequencyPenalty = request.frequency_penalty;
  const format = request.response_format;
  if (format?.type === "json_object" || format?.type === "json_schema") {
    config.responseMimeType = "application/json";
    const schema =
      format.type === "json_schema" ? (format as { json_schema: { schema?: Record<string, unknown> } }).json_schema.schema : undefined;
    if (schema) config.responseJsonSchema = schema;
  }
  const modalities = (request.modalities ?? []).flatMap((m) =>
    m === "text" ? ["TEXT" as const] : m === "image" ? ["IMAGE" as const] : [],
  );
  if (modalities.length > 0) config.responseModalities = modalities;
  return Object.keys(config).length > 0 ? config : undefined;
}

export function convertChatRequestToGemini(request: ChatTranslationRequest): GeminiRequest {
  const out: GeminiRequest = { contents: contentsOf(request.messages) };
  const system = systemInstruction(request.messages);
  if (system) out.systemInstruction = system;
  const functionDeclarations = declarations(request.tools);
  if (functionDeclarations.length > 0) {
    out.tools = [{ functionDeclarations }];
    const calling = functionCalling(request.tool_choice);
    if (calling) out.toolConfig = { functionCallingConfig: calling };
  }
  const config = generationConfig(request);
  if (config) out.generationConfig = config;
  return out;
}
