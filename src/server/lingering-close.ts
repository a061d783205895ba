import type { IncomingMessage, ServerResponse } from "node:http";

// A body refused while the client is still sending it (413, the body budget's 503, 415) must not cost the client
// its answer. Node ends a `Connection: close` answer with `socket.destroySoon()`, which destroys the socket as
// soon as the answer is flushed (@hono/node-server does the same to a body still unread 500 ms after the
// answer); the client's bytes still in flight then meet a closed socket and the kernel resets the connection,
// so the client's writes fail with EPIPE, and Node's http client, for one, drops the 413 that had arrived. So a
// refused request's connection closes the way nginx's lingering close does (RFC 9112 §9.6): read and discard
// the rest of the body, half-close after the answer, and close once the body has ended or a bound is reached.

export interface LingerBounds {
  /** The longest the rest of a refused body is read for, from the refusal on (nginx's lingering_time). */
  totalMs: number;
  /** The longest wait for its next bytes (nginx's lingering_timeout). */
  idleMs: number;
  /** The most bytes of it read; nginx has no such bound, but time alone lets a fast client send gigabytes. */
  maxBytes: number;
}

/** nginx's defaults for the times; twice the evaluation service's 64 MiB cap for the bytes. */
export const LINGER: LingerBounds = { totalMs: 30_000, idleMs: 5_000, maxBytes: 128 * 1024 * 1024 };

/**
 * Called when `incoming`'s body is refused, before the answer is written: from then on the rest of the body is
 * read and discarded, the answer is the connection's last, and the connection closes once the answer is out
 * and the body has ended. A bound reached cuts it (the client has had the answer since the bound's start, in
 * practice: the answer leaves at once).
 */
export function closeAfterAnswer(incoming: IncomingMessage, outgoing: ServerResponse, bounds: LingerBounds = LINGER): void {
  // On the response itself, so that it holds however the route words the refusal.
  if (!outgoing.headersSent) outgoing.setHeader("Connection", "close");
  const socket = incoming.socket;
  let answered = false;
  let ended = incoming.readableEnded;
  let read = 0;
  const close = () => {
    clearTimeout(total);
    clearTimeout(idle);
    incoming.off("data", onData);
    socket.destroy();
  };
  // Once the half-close is flushed: nothing is left unread then, so closing sends no reset.
  const closeFlushed = () => (socket.writableFinished ? close() : socket.once("finish", close));
  const onData = (chunk: Buffer) => {
    read += chunk.length;
    if (read > bounds.maxBytes) close();
    else idle.refresh();
  };
  const total = setTimeout(close, bounds.totalMs);
  const idle = setTimeout(close, bounds.idleMs);
  // Read from now on, not from the answer on: Node drops the body of a request nobody reads by the time its
  // answer is out (so no bytes would be counted), and stops reading the socket when a paused body fills up.
  incoming.on("data", onData);
  incoming.once("end", () => {
    ended = true;
    if (answered) closeFlushed();
  });
  socket.once("close", close);
  incoming.resume();
  // Node calls it once the answer is flushed; @hono/node-server's own drain of unread bodies calls it again.
  socket.destroySoon = () => {
    if (answered) return;
    answered = true;
    // The half-close: the client reads the answer, then the end of the stream, while it may still send.
    socket.end();
    if (ended) closeFlushed();
  };
}
