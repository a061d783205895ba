import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import type { HttpBindings } from "@hono/node-server";
import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import type { MockUpstreamEnv } from "./app.js";

/** One SSE event of a mock stream. */
export interface MockEvent {
  /** The `event:` line (Anthropic, OpenAI Responses); none for chat completions and Gemini. */
  event?: string;
  data: string;
  /** A content delta: what `x-mock-drop-after` counts. */
  content?: boolean;
}

/** A JSON event; `content` marks the deltas that `x-mock-drop-after` counts. */
export function jsonEvent(payload: object, opts: { event?: string; content?: boolean } = {}): MockEvent {
  return { ...opts, data: JSON.stringify(payload) };
}

/**
 * With `x-mock-drop-after: K`, the events up to the K-th content delta (all of them when there are fewer), or
 * before the first one when K is 0: everything a client would have seen had the upstream died right there.
 */
function beforeDrop(events: MockEvent[], dropAfter: number): MockEvent[] {
  const contentAt = events.flatMap((e, i) => (e.content ? [i] : []));
  const lastKept = dropAfter === 0 ? undefined : contentAt[Math.min(dropAfter, contentAt.length) - 1];
  const end = lastKept === undefined ? (contentAt[0] ?? events.length) : lastKept + 1;
  return events.slice(0, end);
}

/** Cuts the TCP connection mid-response, as a crashing upstream or a dropped network path would. */
async function cutConnection(env: HttpBindings): Promise<void> {
  // destroy() discards unsent bytes: first let the events already written reach the wire.
  await new Promise((resolve) => setImmediate(resolve));
  const socket = env.incoming.socket;
  if (socket.writableLength > 0) await once(socket, "drain");
  socket.destroy();
}

/**
 * Streams the events as `text/event-stream`, each written as soon as it is due (not buffered), applying the
 * request's stream faults: `x-mock-chunk-delay-ms` before every event after the first, and `x-mock-drop-after`.
 */
export function playEvents(c: Context<MockUpstreamEnv>, events: MockEvent[]): Response {
  const faults = c.get("faults");
  const sent = faults.dropAfter === undefined ? events : beforeDrop(events, faults.dropAfter);
  return streamSSE(c, async (stream) => {
    for (const [i, event] of sent.entries()) {
      if (i > 0 && faults.chunkDelayMs) {
        // The signal fires when the client goes away, so an abandoned slow stream does not keep a timer alive.
        await sleep(faults.chunkDelayMs, undefined, { signal: c.req.raw.signal }).catch(() => {});
      }
      if (stream.aborted) return;
      await stream.writeSSE(event);
    }
    if (faults.dropAfter !== undefined) await cutConnection(c.env);
  });
}
