import http from "node:http";
import net from "node:net";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { closeAfterAnswer, LINGER, type LingerBounds } from "../../src/server/lingering-close.js";
import { drained, writeThenRead } from "../helpers/body-clients.js";

// The lingering close (src/server/lingering-close.ts) on a bare Node server that refuses every body before
// reading it: a client still sending its body reads the answer and then a clean end, never a reset; one that
// keeps sending past a bound (bytes, idle time, total time) has its connection cut, after the answer.

const MiB = 1024 * 1024;
const servers: http.Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A server refusing every body before reading it; `closed` settles when it has closed the connection. */
async function refusing(bounds: LingerBounds): Promise<{ port: number; closed: Promise<void> }> {
  let closedNow!: () => void;
  const closed = new Promise<void>((resolve) => (closedNow = resolve));
  const server = http.createServer((req, res) => {
    closeAfterAnswer(req, res, bounds);
    req.socket.on("close", closedNow);
    res.writeHead(413, { "content-type": "text/plain", "content-length": 9 }).end("too large");
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as AddressInfo).port, closed };
}

const head = (length: number) => `POST / HTTP/1.1\r\nHost: test\r\nContent-Length: ${length}\r\n\r\n`;

interface Sender {
  socket: net.Socket;
  /** What the client received and how many body bytes it wrote, once its connection is gone. */
  done: Promise<{ received: string; sent: number }>;
}

/**
 * A client that goes on sending after the server's half-close, as one that writes its whole body before it
 * looks at the answer does: `next` gives each next piece of the body, or null to stop sending.
 */
function keepSending(port: number, declared: number, next: () => Promise<Buffer | null>): Sender {
  const socket = net.connect({ port, host: "127.0.0.1", allowHalfOpen: true });
  const received: Buffer[] = [];
  let sent = 0;
  socket.on("data", (chunk: Buffer) => received.push(chunk));
  socket.on("error", () => {});
  const done = new Promise<{ received: string; sent: number }>((resolve) =>
    socket.on("close", () => resolve({ received: Buffer.concat(received).toString("utf8"), sent })),
  );
  socket.write(head(declared));
  void (async () => {
    while (!socket.destroyed && sent < declared) {
      const piece = await next();
      if (!piece || socket.destroyed) return;
      sent += piece.length;
      if (!socket.write(piece)) await drained(socket);
    }
  })();
  return { socket, done };
}

const answered = (text: string) => {
  expect(text).toMatch(/^HTTP\/1\.1 413 /);
  expect(text.toLowerCase()).toContain("connection: close");
  expect(text).toMatch(/too large$/);
};

describe("the lingering close", () => {
  it("reads the rest of the body, so a client that writes it all before reading gets the answer and a clean end", async () => {
    const { port } = await refusing(LINGER);
    answered(await writeThenRead(port, head(32 * MiB), Buffer.alloc(32 * MiB)));
  });

  it("cuts a client past the byte bound", async () => {
    const { port, closed } = await refusing({ totalMs: 60_000, idleMs: 60_000, maxBytes: 4 * MiB });
    const piece = Buffer.alloc(64 * 1024);
    const client = keepSending(port, 1024 * MiB, () => Promise.resolve(piece));
    await closed;
    const { received, sent } = await client.done;
    answered(received);
    expect(sent).toBeLessThan(1024 * MiB);
  });

  it("cuts a client that stops sending for the idle bound", async () => {
    const { port, closed } = await refusing({ totalMs: 60_000, idleMs: 50, maxBytes: 64 * MiB });
    let pieces = 0;
    const client = keepSending(port, 1024, () => Promise.resolve(pieces++ < 4 ? Buffer.alloc(100) : null));
    await closed;
    // The client sends nothing more, so it learns of the close only when it next writes; it hangs up instead.
    client.socket.destroy();
    answered((await client.done).received);
  });

  it("cuts a client that trickles for the total bound", async () => {
    const { port, closed } = await refusing({ totalMs: 100, idleMs: 60_000, maxBytes: 64 * MiB });
    const piece = Buffer.alloc(10);
    let stop = false;
    const client = keepSending(port, MiB, () => new Promise((resolve) => setTimeout(() => resolve(stop ? null : piece), 5)));
    await closed;
    stop = true;
    client.socket.destroy();
    answered((await client.done).received);
  });
});
