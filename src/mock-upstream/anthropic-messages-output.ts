import type { MessagesRequest } from "./anthropic-messages-request.js";
import { argumentSlices } from "./mock-text.js";
import { jsonEvent, type MockEvent } from "./sse.js";

/**
 * The shapes of an Anthropic Messages answer: the `Message` object (JSON answer, and the start of a stream)
 * and the SSE event sequence the real API sends for one content block.
 */

export function usageOf(input: number, output: number) {
  return {
    input_tokens: input,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    output_tokens: output,
    server_tool_use: null,
    service_tier: "standard",
    inference_geo: null,
  };
}

interface ToolUse {
  id: string;
  name: string;
  input: object;
}

/** What to answer, independent of JSON or SSE delivery: the stream's deltas concatenate to the JSON content. */
export interface Plan {
  id: string;
  /** Text deltas; empty for tool use. */
  pieces: string[];
  toolUse?: ToolUse;
  stopReason: "end_turn" | "max_tokens" | "tool_use";
  usage: ReturnType<typeof usageOf>;
}

/** The one content block, empty as `content_block_start` shows it, or finished. */
function contentBlock(p: Plan, done: boolean) {
  if (p.toolUse) return { type: "tool_use", ...p.toolUse, input: done ? p.toolUse.input : {}, caller: { type: "direct" } };
  return { type: "text", text: done ? p.pieces.join("") : "", citations: null };
}

/** The `Message`: finished for a JSON answer, or as `message_start` shows it (no content, no stop reason yet). */
export function messageObject(req: MessagesRequest, p: Plan, omitUsage: boolean, started = false) {
  // At the start of a stream the API reports the input and a first output token; message_delta has the rest.
  const usage = started ? { ...p.usage, output_tokens: 1 } : p.usage;
  return {
    id: p.id,
    type: "message",
    role: "assistant",
    content: started ? [] : [contentBlock(p, true)],
    model: req.model,
    stop_reason: started ? null : p.stopReason,
    stop_sequence: null,
    stop_details: null,
    container: null,
    ...(omitUsage ? {} : { usage }),
  };
}

/**
 * The real API's sequence, each event named by an `event:` line equal to its `type`: message_start,
 * content_block_start, ping, content_block_delta (text_delta per word, or input_json_delta slices),
 * content_block_stop, message_delta (stop reason and the cumulative usage), message_stop.
 */
export function messageEvents(req: MessagesRequest, p: Plan, omitUsage: boolean): MockEvent[] {
  const event = (type: string, payload: object = {}, content = false) => jsonEvent({ type, ...payload }, { event: type, content });
  const deltas = p.toolUse
    ? argumentSlices(JSON.stringify(p.toolUse.input)).map((partial_json) => ({ type: "input_json_delta", partial_json }))
    : p.pieces.map((text) => ({ type: "text_delta", text }));
  // message_delta's usage (MessageDeltaUsage) holds the cumulative counts only.
  const { input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens, server_tool_use } = p.usage;
  const deltaUsage = { input_tokens, cache_creation_input_tokens, cache_read_input_tokens, output_tokens, server_tool_use };
  return [
    event("message_start", { message: messageObject(req, p, omitUsage, true) }),
    event("content_block_start", { index: 0, content_block: contentBlock(p, false) }),
    event("ping"),
    ...deltas.map((delta) => event("content_block_delta", { index: 0, delta }, true)),
    event("content_block_stop", { index: 0 }),
    event("message_delta", {
      delta: { stop_reason: p.stopReason, stop_sequence: null, stop_details: null, container: null },
      ...(omitUsage ? {} : { usage: deltaUsage }),
    }),
    event("message_stop"),
  ];
}
