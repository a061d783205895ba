// The Anthropic Message as the translations write it. Fields the reference marks required but that have
// nothing to say here (citations, caller, container, stop_details, ...) are present as their null or default,
// so the output validates against the reference's Message and stream event schemas.

export type AnthropicStopReason = "end_turn" | "max_tokens" | "stop_sequence" | "tool_use" | "pause_turn" | "refusal";

export type AnthropicTextOutput = { type: "text"; text: string; citations: null };

export type AnthropicToolUseOutput = {
  type: "tool_use";
  id: string;
  name: string;
  input: Record<string, unknown>;
  caller: { type: "direct" };
};

export type AnthropicUsage = {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: null;
  inference_geo: null;
  server_tool_use: null;
  service_tier: null;
};

export type AnthropicMessage = {
  id: string;
  type: "message";
  role: "assistant";
  content: (AnthropicTextOutput | AnthropicToolUseOutput)[];
  model: string;
  stop_reason: AnthropicStopReason | null;
  stop_sequence: null;
  stop_details: null;
  container: null;
  usage: AnthropicUsage;
};
