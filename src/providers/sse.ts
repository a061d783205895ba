import { Readable } from "node:stream";
import { createParser } from "eventsource-parser";
import type { StreamEvent } from "./types.js";
import { UpstreamError } from "./types.js";

/**
 * Parses an upstream SSE body into JSON events as bytes arrive, yielding every event completed by one network
 * chunk as one batch (so the relay writes once per chunk, not once per event). `[DONE]` ends the stream; a
 * body that ends without it is a dropped stream (protocol error) unless `requireDone` is false.
 */
export async function* parseSse(body: AsyncIterable<Uint8Array>, requireDone = true): AsyncGenerator<StreamEvent[]> {
  const decoder = new TextDecoder();
  let batch: StreamEvent[] = [];
  let malformed = false;
  const parser = createParser({
    onEvent(event) {
      if (event.data === "[DONE]") {
        batch.push({ done: true });
        return;
      }
      try {
        const data: unknown = JSON.parse(event.data);
        if (data === null || typeof data !== "object" || Array.isArray(data)) malformed = true;
        else batch.push({ data: data as Record<string, unknown>, raw: event.data });
      } catch {
        malformed = true;
      }
    },
  });
  // Leaving a stream's `for await` early destroys it with an AbortError (a stack trace per request); release()
  // ends it without one.
  const source = body instanceof Readable ? body.iterator({ destroyOnReturn: false }) : body;
  let sawDone = false;
  try {
    for await (const chunk of source) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      if (malformed) throw new UpstreamError("protocol", null);
      if (batch.length === 0) continue;
      const events = batch;
      batch = [];
      const done = events.findIndex((event) => "done" in event);
      if (done >= 0) {
        sawDone = true;
        yield done === events.length - 1 ? events : events.slice(0, done + 1);
        return;
      }
      yield events;
    }
  } finally {
    if (body instanceof Readable) release(body);
  }
  if (requireDone && !sawDone) throw new UpstreamError("protocol", null);
}

/**
 * After [DONE] the body has usually arrived whole: reading on lets it end on its own, which keeps the
 * keep-alive connection without building an error. A body still open a tick later is cut.
 */
function release(body: Readable) {
  if (body.readableEnded || body.destroyed) return;
  body.resume();
  setImmediate(() => {
    if (!body.readableEnded) body.destroy();
  });
}
