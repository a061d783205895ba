import type { ResponsesRequest } from "./openai-responses-request.js";
import { jsonEvent, type MockEvent } from "./sse.js";

/**
 * The shapes of a Responses API answer: the `Response` object (JSON answer, and the snapshots inside stream
 * events) and the SSE event sequence the real API sends for one output item.
 */

const CREATED = 1_735_689_600;

export function usageOf(input: number, output: number) {
  return {
    input_tokens: input,
    input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
    output_tokens: output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: input + output,
  };
}

interface FunctionCall {
  id: string;
  call_id: string;
  name: string;
  arguments: string;
}

/** What to answer, independent of JSON or SSE delivery: the stream's deltas concatenate to the JSON output. */
export interface Plan {
  id: string;
  /** The id of the one output item (message or function call). */
  itemId: string;
  /** Text deltas, or argument slices for a function call. */
  pieces: string[];
  call?: FunctionCall;
  truncated: boolean;
  usage: ReturnType<typeof usageOf>;
}

type ItemStatus = "in_progress" | "completed" | "incomplete";

const textPart = (text: string) => ({ type: "output_text", annotations: [], logprobs: [], text });

/** The one output item: empty while in progress, as the stream's `output_item.added` shows it. */
function outputItem(p: Plan, status: ItemStatus) {
  const done = status !== "in_progress";
  if (p.call) return { type: "function_call", ...p.call, arguments: done ? p.call.arguments : "", status };
  return { id: p.itemId, type: "message", status, content: done ? [textPart(p.pieces.join(""))] : [], role: "assistant" };
}

/** Tools as the API echoes them: function tools with every field present, others as sent. */
const echoedTool = (t: NonNullable<ResponsesRequest["tools"]>[number]) =>
  t.type === "function" ? { description: null, parameters: null, strict: true, ...t } : t;

/** The `Response` object: in progress (no output, no usage) at the start of a stream, else final. */
export function responseObject(req: ResponsesRequest, p: Plan, final: boolean, omitUsage: boolean) {
  const status = !final ? "in_progress" : p.truncated ? "incomplete" : "completed";
  return {
    id: p.id,
    object: "response",
    created_at: CREATED,
    status,
    background: false,
    completed_at: status === "completed" ? CREATED + 1 : null,
    error: null,
    incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
    instructions: req.instructions ?? null,
    max_output_tokens: req.max_output_tokens ?? null,
    max_tool_calls: null,
    model: req.model,
    output: final ? [outputItem(p, p.truncated ? "incomplete" : "completed")] : [],
    parallel_tool_calls: req.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    service_tier: "default",
    store: true,
    temperature: req.temperature ?? 1,
    text: { format: { type: "text" }, verbosity: "medium" },
    tool_choice: req.tool_choice ?? "auto",
    tools: (req.tools ?? []).map(echoedTool),
    top_p: req.top_p ?? 1,
    truncation: "disabled",
    // The API sends `usage: null` until the response is done.
    usage: final && !omitUsage ? p.usage : null,
    metadata: req.metadata ?? {},
  };
}

/**
 * The real API's sequence: created, in_progress, output_item.added, then for a message content_part.added,
 * one output_text.delta per piece, output_text.done, content_part.done (for a function call,
 * function_call_arguments.delta/done), output_item.done, and completed or incomplete. Every event carries its
 * `type` in both the `event:` line and the data, and a `sequence_number` counting from 0.
 */
export function responseEvents(req: ResponsesRequest, p: Plan, omitUsage: boolean): MockEvent[] {
  const events: MockEvent[] = [];
  const push = (type: string, payload: object, content = false) =>
    events.push(jsonEvent({ type, sequence_number: events.length, ...payload }, { event: type, content }));
  const at = { item_id: p.itemId, output_index: 0 };
  const itemStatus = p.truncated ? "incomplete" : "completed";
  const text = p.pieces.join("");

  push("response.created", { response: responseObject(req, p, false, omitUsage) });
  push("response.in_progress", { response: responseObject(req, p, false, omitUsage) });
  push("response.output_item.added", { output_index: 0, item: outputItem(p, "in_progress") });
  if (p.call) {
    for (const delta of p.pieces) push("response.function_call_arguments.delta", { ...at, delta }, true);
    push("response.function_call_arguments.done", { ...at, name: p.call.name, arguments: p.call.arguments });
  } else {
    push("response.content_part.added", { ...at, content_index: 0, part: textPart("") });
    for (const delta of p.pieces) push("response.output_text.delta", { ...at, content_index: 0, delta, logprobs: [] }, true);
    push("response.output_text.done", { ...at, content_index: 0, text, logprobs: [] });
    push("response.content_part.done", { ...at, content_index: 0, part: textPart(text) });
  }
  push("response.output_item.done", { output_index: 0, item: outputItem(p, itemStatus) });
  const final = responseObject(req, p, true, omitUsage);
  push(p.truncated ? "response.incomplete" : "response.completed", { response: final });
  return events;
}
