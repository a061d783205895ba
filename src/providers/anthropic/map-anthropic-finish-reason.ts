import type { AnthropicStopReason } from "./message-types.js";

/**
 * OpenAI chat finish_reason → Anthropic stop_reason. Chat does not say whether "stop" was the model's own end
 * or a stop sequence, so it is end_turn (stop_sequence stays null); content_filter is the nearest Anthropic
 * notion, a refusal. Missing or unknown reasons read as end_turn.
 */
export function mapChatFinishReason(reason: unknown): AnthropicStopReason {
  switch (reason) {
    case "length":
      return "max_tokens";
    case "tool_calls":
    case "function_call":
      return "tool_use";
    case "content_filter":
      return "refusal";
    default:
      return "end_turn";
  }
}
