import { createParser } from "eventsource-parser";
import type { StreamEvent } from "./types.js";
import { UpstreamError } from "./types.js";

/**
 * Parses an upstream SSE body into JSON events as bytes arrive. `[DONE]` ends the stream; a body that ends
 * without it is a dropped stream (protocol error) unless `requireDone` is false.
 */
export async function* parseSse(body: AsyncIterable<Uint8Array>, requireDone = true): AsyncGenerator<StreamEvent> {
  const decoder = new TextDecoder();
  const queue: StreamEvent[] = [];
  let malformed = false;
  const parser = createParser({
    onEvent(event) {
      if (event.data === "[DONE]") {
        queue.push({ done: true });
        return;
      }
      try {
        const data: unknown = JSON.parse(event.data);
        if (data !== null && typeof data === "object" && !Array.isArray(data)) queue.push({ data: data as Record<string, unknown> });
        else malformed = true;
      } catch {
        malformed = true;
      }
    },
  });
  let sawDone = false;
  for await (const chunk of body) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    if (malformed) throw new UpstreamError("protocol", null);
    while (queue.length > 0) {
      const event = queue.shift()!;
      if ("done" in event) {
        sawDone = true;
        yield event;
        return;
      }
      yield event;
    }
  }
  if (requireDone && !sawDone) throw new UpstreamError("protocol", null);
}
