import { readResponsesStreamUsage } from "../../providers/openai/convert-openai-usage.js";
import type { StreamEvent, UsageReport } from "../../providers/types.js";
import { localUsage } from "../estimate.js";
import { STREAM_FAILURE_MESSAGES, type RelayProtocol } from "./stream-relay.js";

// A Responses stream as the client gets it: events as the upstream sent them, the public model ID put into the
// response object; billed from the terminal event's usage, else from the delivered deltas (docs/billing.md).

/** The terminal events: the response with its usage. */
const TERMINAL = new Set(["response.completed", "response.incomplete", "response.failed"]);

/** Stream events whose delta is generated output. */
const DELTAS = new Set(["response.output_text.delta", "response.refusal.delta", "response.function_call_arguments.delta"]);

export function relayResponses(publicModel: string, countPrompt: () => Promise<number>): RelayProtocol {
  const delivered: string[] = [];
  let usage: UsageReport | null = null;
  let sequence = 0;
  // The response object the stream last showed (created, in_progress): what response.incomplete repeats.
  let response: Record<string, unknown> | null = null;
  const frame = (type: string, data: string) => `event: ${type}\ndata: ${data}\n\n`;
  return {
    closing: (event) => !("done" in event) && TERMINAL.has(String(event.data.type ?? event.event)),
    transform(event: StreamEvent) {
      if ("done" in event) return "";
      const { data } = event;
      const type = typeof data.type === "string" ? data.type : (event.event ?? "message");
      if (typeof data.sequence_number === "number") sequence = data.sequence_number;
      usage = readResponsesStreamUsage(data, usage);
      if (DELTAS.has(type) && typeof data.delta === "string") delivered.push(data.delta);
      const shown = data.response as Record<string, unknown> | undefined;
      // The response object (created, in_progress, completed, …) names the model; deltas do not.
      if (shown && typeof shown === "object" && typeof shown.model === "string") {
        shown.model = publicModel;
        response = shown;
        return frame(type, JSON.stringify(data));
      }
      return frame(type, event.raw);
    },
    usage: () => usage,
    countLocal: () => localUsage(countPrompt, delivered.join("")),
    output: {
      delivered,
      lengthEnd: (ctx) =>
        ctx.localUsage().then((u) => {
          const incomplete = response ?? { object: "response", model: publicModel, output: [] };
          incomplete.status = "incomplete";
          incomplete.incomplete_details = { reason: "max_output_tokens" };
          incomplete.usage = {
            input_tokens: u.promptTokens,
            input_tokens_details: { cached_tokens: u.cachedTokens },
            output_tokens: u.completionTokens,
            output_tokens_details: { reasoning_tokens: 0 },
            total_tokens: u.promptTokens + u.completionTokens,
          };
          sequence += 1;
          return frame(
            "response.incomplete",
            JSON.stringify({ type: "response.incomplete", sequence_number: sequence, response: incomplete }),
          );
        }),
    },
    errorFrame: (_requestId, code) =>
      frame(
        "error",
        JSON.stringify({
          type: "error",
          code,
          message: STREAM_FAILURE_MESSAGES[code],
          param: null,
          sequence_number: sequence + 1,
        }),
      ),
  };
}
