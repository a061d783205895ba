import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import type { Context } from "hono";
import type { AppEnv } from "./context.js";
import { standardHeaders } from "./request-context.js";

// Responses of the hot path, built without Hono's helpers: c.json()/c.body() gather headers in a WHATWG
// `Headers` that @hono/node-server then reads back into a plain object, and a streamed body would be a WHATWG
// ReadableStream (costly to build, and a promise round per chunk). Here headers stay a plain object and a
// stream is written straight into Node's response. Headers are merged with Object.assign, not spread (src/objects.ts);
// their names are the gateway's own.

/** A complete text body with the standard headers. */
export function respondText(c: Context<AppEnv>, status: number, body: string, headers: Record<string, string>): Response {
  return new Response(body, { status, headers: Object.assign(standardHeaders(c.get("requestId")), headers) });
}

/**
 * A complete body of bytes in pieces, with the standard headers and its Content-Length, written straight into
 * Node's response one piece after the other: an image answer's megabytes of base64 go to the socket from the buffer
 * they arrived in, never copied into one. In-process calls (app.request) get the pieces joined.
 */
export function respondBytes(c: Context<AppEnv>, status: number, parts: readonly Uint8Array[], headers: Record<string, string>): Response {
  const all = Object.assign(standardHeaders(c.get("requestId")), headers);
  const outgoing = c.env?.outgoing;
  if (!outgoing) return new Response(Buffer.concat(parts), { status, headers: all });
  let length = 0;
  for (const part of parts) length += part.length;
  all["content-length"] = String(length);
  outgoing.writeHead(status, all);
  // Corked, the head and the pieces leave in one writev (end() uncorks), not one send (and wake-up) per piece.
  outgoing.cork();
  for (const part of parts) outgoing.write(part);
  outgoing.end();
  return RESPONSE_ALREADY_SENT;
}

/** Where a pushed body goes: Node's response, or a web stream for in-process calls. */
export interface BodySink {
  /**
   * Sends `text` at once; "" sends only the headers, if they have not gone yet. False when the client is not
   * keeping up: hold further writes until onDrain calls back.
   */
  write(text: string): boolean;
  /** Calls `resume` once the client has taken what was written (never, if it leaves first). */
  onDrain(resume: () => void): void;
  end(): void;
}

/** A body produced by pushes, such as a relayed upstream stream. */
export interface PushedBody {
  start(sink: BodySink): void;
  /** The client went away before end(): stop producing. */
  cancel(): void;
}

/**
 * A 200 whose body `body` pushes as it comes, written as soon as each piece is ready and only as fast as the
 * client reads.
 */
export function respondStream(c: Context<AppEnv>, headers: Record<string, string>, body: PushedBody): Response {
  const all = Object.assign(standardHeaders(c.get("requestId")), headers);
  const outgoing = c.env?.outgoing;
  // In-process calls (app.request) have no Node response to write to.
  if (!outgoing) return new Response(webStream(body), { status: 200, headers: all });
  outgoing.writeHead(200, all);
  let ended = false;
  outgoing.once("close", () => {
    if (!ended) body.cancel();
  });
  body.start({
    write(text) {
      if (outgoing.destroyed) return false;
      if (text) return outgoing.write(text);
      if (!outgoing.headersSent) outgoing.flushHeaders();
      return true;
    },
    onDrain: (resume) => void outgoing.once("drain", resume),
    end() {
      ended = true;
      if (!outgoing.destroyed) outgoing.end();
    },
  });
  return RESPONSE_ALREADY_SENT;
}

const encoder = new TextEncoder();

function webStream(body: PushedBody): ReadableStream<Uint8Array> {
  let waiting: (() => void) | undefined;
  let closed = false;
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        body.start({
          write(text) {
            if (closed) return false;
            if (text) controller.enqueue(encoder.encode(text));
            return (controller.desiredSize ?? 0) > 0;
          },
          onDrain: (resume) => void (waiting = resume),
          end() {
            if (closed) return;
            closed = true;
            controller.close();
          },
        });
      },
      pull() {
        const resume = waiting;
        waiting = undefined;
        resume?.();
      },
      cancel() {
        closed = true;
        body.cancel();
      },
    },
    { highWaterMark: 1 },
  );
}
