import { isFinalAnthropicUsageEvent, readAnthropicStreamUsage } from "../../providers/anthropic/convert-anthropic-usage.js";
import { collectMessageStreamText } from "../../providers/anthropic/message-text.js";
import { asObject } from "../../providers/json-guards.js";
import { nativeRelay, type DataEvent } from "./relay-protocols.js";
import { STREAM_FAILURE_MESSAGES, type RelayProtocol, type StreamFailure } from "./stream-relay.js";

// An Anthropic Messages stream from a target that speaks it (docs/translation.md), and the in-band error of the
// protocol, which translated streams use too.

const frame = (name: string, data: string) => `event: ${name}\ndata: ${data}\n\n`;

/** Anthropic's in-band `error` event, as its SDK raises it: a stream that cannot go on after it began. */
export function messagesErrorFrame(requestId: string, code: StreamFailure = "upstream_stream_interrupted"): string {
  const error = { type: "api_error", message: STREAM_FAILURE_MESSAGES[code] };
  return frame("error", JSON.stringify({ type: "error", error, request_id: requestId }));
}

/** A native stream: events as the provider sent them, the public model ID put into message_start's message. */
export function relayNativeMessages(publicModel: string, countPrompt: () => Promise<number>): RelayProtocol {
  // The content block begun and not stopped yet: a stream ended at its output cap closes it first.
  let openBlock: unknown = null;
  return nativeRelay({
    readUsage: readAnthropicStreamUsage,
    isFinal: isFinalAnthropicUsageEvent,
    collectText: collectMessageStreamText,
    countPrompt,
    errorFrame: messagesErrorFrame,
    closing: (data) => data.type === "message_delta" || data.type === "message_stop",
    write(event: DataEvent) {
      const type = typeof event.data.type === "string" ? event.data.type : "message";
      if (type === "content_block_start") openBlock = event.data.index;
      else if (type === "content_block_stop") openBlock = null;
      const message = type === "message_start" ? asObject(event.data.message) : undefined;
      if (!message) return frame(event.event ?? type, event.raw);
      message.model = publicModel;
      return frame(event.event ?? type, JSON.stringify(event.data));
    },
    lengthEnd(usage) {
      const stop = openBlock === null ? "" : frame("content_block_stop", JSON.stringify({ type: "content_block_stop", index: openBlock }));
      const delta = { stop_reason: "max_tokens", stop_sequence: null };
      return (
        stop +
        frame("message_delta", JSON.stringify({ type: "message_delta", delta, usage: { output_tokens: usage.completionTokens } })) +
        frame("message_stop", JSON.stringify({ type: "message_stop" }))
      );
    },
  });
}
