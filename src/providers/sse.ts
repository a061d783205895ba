import { Readable } from "node:stream";
import { createParser } from "eventsource-parser";
import { classifyError } from "./http.js";
import type { StreamEvent } from "./types.js";
import { UpstreamError } from "./types.js";

/**
 * How one protocol's stream shows that it ran its course. `data: [DONE]` (OpenAI chat) always ends a stream;
 * the other protocols end with an event of their own (Anthropic `message_stop`, Responses `response.completed`)
 * or, like Gemini, simply close the body after a chunk that carries a finish reason.
 */
export interface SseRules {
  /** The stream's last event: nothing after it is read. */
  isLast?: (data: Record<string, unknown>) => boolean;
  /** An event after which the body may end (for protocols without a last event). */
  isComplete?: (data: Record<string, unknown>) => boolean;
  /**
   * An in-stream error event as the UpstreamError it stands for. It is raised instead of relayed: its text is
   * the upstream's, which never reaches a client, and one arriving first still lets the gateway fall back.
   */
  toError?: (data: Record<string, unknown>) => UpstreamError | null;
}

/**
 * Parses an upstream SSE body into JSON events as bytes arrive, yielding every event completed by one network
 * chunk as one batch (so the relay writes once per chunk, not once per event). A body that ends before the
 * rules say the stream is complete is a dropped stream (protocol error). `event:` names are kept beside the
 * data; the protocols that send them repeat the name in the data's `type`.
 */
export async function* parseSse(
  body: AsyncIterable<Uint8Array>,
  rules: SseRules = {},
  /** With the request's signal, network failures while reading surface as UpstreamError, as before the first byte. */
  signal?: AbortSignal,
): AsyncGenerator<StreamEvent[]> {
  const { isLast, isComplete, toError } = rules;
  const decoder = new TextDecoder();
  let batch: StreamEvent[] = [];
  let malformed = false;
  let complete = false;
  const parser = createParser({
    onEvent(event) {
      if (event.data === "[DONE]") {
        batch.push({ done: true });
        return;
      }
      try {
        const data: unknown = JSON.parse(event.data);
        if (data === null || typeof data !== "object" || Array.isArray(data)) malformed = true;
        else if (event.event === undefined) batch.push({ data: data as Record<string, unknown>, raw: event.data });
        else batch.push({ data: data as Record<string, unknown>, raw: event.data, event: event.event });
      } catch {
        malformed = true;
      }
    },
  });
  // Leaving a stream's `for await` early destroys it with an AbortError (a stack trace per request); release()
  // ends it without one.
  const source = body instanceof Readable ? body.iterator({ destroyOnReturn: false }) : body;
  try {
    for await (const chunk of source) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      if (malformed) throw new UpstreamError("protocol", null);
      if (batch.length === 0) continue;
      const events = batch;
      batch = [];
      const end = events.findIndex((event) => "done" in event || (isLast !== undefined && isLast(event.data)));
      const kept = end >= 0 ? events.slice(0, end + 1) : events;
      if (toError) {
        for (let i = 0; i < kept.length; i++) {
          const event = kept[i]!;
          const error = "data" in event ? toError(event.data) : null;
          if (!error) continue;
          if (i > 0) yield kept.slice(0, i);
          throw error;
        }
      }
      if (end >= 0) {
        yield kept;
        return;
      }
      if (isComplete && !complete) complete = events.some((event) => "data" in event && isComplete(event.data));
      yield events;
    }
  } catch (err) {
    // Here rather than in a wrapping generator: each layer of async iteration costs per network read.
    throw signal ? classifyError(err, signal) : err;
  } finally {
    if (body instanceof Readable) release(body);
  }
  if (!complete) throw new UpstreamError("protocol", null);
}

/**
 * After the last event the body has usually arrived whole: reading on lets it end on its own, which keeps the
 * keep-alive connection without building an error. A body still open a tick later is cut.
 */
function release(body: Readable) {
  if (body.readableEnded || body.destroyed) return;
  body.resume();
  setImmediate(() => {
    if (!body.readableEnded) body.destroy();
  });
}
