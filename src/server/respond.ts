import type { ServerResponse } from "node:http";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import type { Context } from "hono";
import type { AppEnv } from "./context.js";
import { standardHeaders } from "./request-id.js";

// Responses of the hot path, built without Hono's helpers: c.json()/c.body() gather headers in a WHATWG
// `Headers` that @hono/node-server then reads back into a plain object, and a streamed body would be a WHATWG
// ReadableStream (costly to build, and a promise round per chunk). Here headers stay a plain object and a
// stream is written straight into Node's response.

/** A complete text body with the standard headers. */
export function respondText(c: Context<AppEnv>, status: number, body: string, headers: Record<string, string>): Response {
  return new Response(body, { status, headers: { ...standardHeaders(c.get("requestId")), ...headers } });
}

/**
 * A 200 whose body is `chunks` as they come, written as soon as each is ready and only as fast as the client
 * reads. An empty chunk writes nothing but sends the headers if they have not gone yet.
 */
export function respondStream(c: Context<AppEnv>, headers: Record<string, string>, chunks: AsyncGenerator<string, void, undefined>): Response {
  const all = { ...standardHeaders(c.get("requestId")), ...headers };
  const outgoing = c.env?.outgoing;
  // In-process calls (app.request) have no Node response to write to.
  if (!outgoing) return new Response(webStream(chunks), { status: 200, headers: all });
  outgoing.writeHead(200, all);
  void pump(chunks, outgoing);
  return RESPONSE_ALREADY_SENT;
}

async function pump(chunks: AsyncGenerator<string, void, undefined>, outgoing: ServerResponse): Promise<void> {
  try {
    for await (const text of chunks) {
      if (!text) {
        if (!outgoing.headersSent) outgoing.flushHeaders();
      } else if (!outgoing.write(text) && !(await drained(outgoing))) {
        return;
      }
    }
    if (!outgoing.destroyed) outgoing.end();
  } catch {
    outgoing.destroy();
  }
}

/** Resolves true once the client took the buffered bytes, false if it left. */
function drained(outgoing: ServerResponse): Promise<boolean> {
  if (outgoing.destroyed) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onDrain = () => {
      outgoing.off("close", onClose);
      resolve(true);
    };
    const onClose = () => {
      outgoing.off("drain", onDrain);
      resolve(false);
    };
    outgoing.once("drain", onDrain);
    outgoing.once("close", onClose);
  });
}

const encoder = new TextEncoder();

function webStream(chunks: AsyncGenerator<string, void, undefined>): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        for (;;) {
          const next = await chunks.next();
          if (next.done) return controller.close();
          if (next.value) return controller.enqueue(encoder.encode(next.value));
        }
      },
      async cancel() {
        await chunks.return(undefined);
      },
    },
    { highWaterMark: 0 },
  );
}
