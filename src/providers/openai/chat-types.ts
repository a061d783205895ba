// The OpenAI chat request as the translations write it: only the parts they produce (the full request is the
// reference's CreateChatCompletionRequest, which the translation tests validate against).

export type ChatContentPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };

export type ChatToolCall = { id: string; type: "function"; function: { name: string; arguments: string } };

export type ChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string | ChatContentPart[] }
  | { role: "assistant"; content: string | null; tool_calls?: ChatToolCall[] }
  | { role: "tool"; tool_call_id: string; content: string };

export type ChatTool = { type: "function"; function: { name: string; description?: string; parameters?: Record<string, unknown> } };

export type ChatToolChoice = "auto" | "none" | "required" | { type: "function"; function: { name: string } };

export type ChatRequestBody = {
  model: string;
  messages: ChatMessage[];
  max_tokens?: number;
  temperature?: number;
  top_p?: number;
  n?: number;
  stop?: string[];
  seed?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
  response_format?: { type: "json_object" } | { type: "json_schema"; json_schema: { name: string; schema: Record<string, unknown> } };
  tools?: ChatTool[];
  tool_choice?: ChatToolChoice;
  parallel_tool_calls?: boolean;
  stream?: boolean;
  stream_options?: { include_usage: boolean };
};
