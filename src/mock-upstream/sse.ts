import { once } from "node:events";
import { setTimeout as sleep } from "node:timers/promises";
import type { ServerResponse } from "node:http";
import type { HttpBindings } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import type { Context } from "hono";
import type { MockUpstreamEnv } from "./context.js";

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

/** The event as SSE text. */
function frame(event: MockEvent): string {
  return event.event === undefined ? `data: ${event.data}\n\n` : `event: ${event.event}\ndata: ${event.data}\n\n`;
}

/**
 * Streams the events as `text/event-stream`, each written as soon as it is due (not buffered), applying the
 * request's stream faults: `x-mock-chunk-delay-ms` before every event after the first, and `x-mock-drop-after`.
 * Written straight into Node's response, one write per event: the benchmark measures the gateway against this
 * mock on shared cores, and a WHATWG stream with an await per event made the mock cost more CPU per stream
 * than the gateway.
 */
export function playEvents(c: Context<MockUpstreamEnv>, events: MockEvent[]): Response {
  const faults = c.get("faults");
  const sent = faults.dropAfter === undefined ? events : beforeDrop(events, faults.dropAfter);
  const res = c.env.outgoing;
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  void play(c, res, sent);
  return RESPONSE_ALREADY_SENT;
}

async function play(c: Context<MockUpstreamEnv>, res: ServerResponse, events: MockEvent[]): Promise<void> {
  const faults = c.get("faults");
  try {
    for (const [i, event] of events.entries()) {
      if (i > 0 && faults.chunkDelayMs) {
        // The signal fires when the client goes away, so an abandoned slow stream does not keep a timer alive.
        await sleep(faults.chunkDelayMs, undefined, { signal: c.req.raw.signal }).catch(() => {});
      }
      if (res.destroyed) return;
      res.write(frame(event));
    }
    if (faults.dropAfter !== undefined) await cutConnection(c.env);
    else res.end();
  } catch {
    res.destroy();
  }
}
