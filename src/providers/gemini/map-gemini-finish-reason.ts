import type { GeminiFinishReason } from "./response-types.js";

/**
 * OpenAI chat finish_reason → Gemini finishReason. Gemini ends a turn of function calls with STOP too, and its
 * content filter is SAFETY. A missing reason is a normal end (STOP); one Gemini has no name for is OTHER.
 */
export function mapChatFinishReason(reason: unknown): GeminiFinishReason {
  switch (reason) {
    case "stop":
    case "tool_calls":
    case "function_call":
    case null:
    case undefined:
      return "STOP";
    case "length":
      return "MAX_TOKENS";
    case "content_filter":
      return "SAFETY";
    default:
      return "OTHER";
  }
}
