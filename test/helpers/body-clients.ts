import net from "node:net";

// Clients posting a body the way real ones do, for the tests of refused bodies.

/**
 * Writes `head` and `body` on a bare connection before reading anything, then settles with everything the
 * server sent until it closed; rejects on a reset, which is what loses a client its answer.
 */
export function writeThenRead(port: number, head: string, body: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, "127.0.0.1");
    const received: Buffer[] = [];
    socket.pause();
    socket.on("error", reject);
    socket.on("end", () => resolve(Buffer.concat(received).toString("utf8")));
    socket.write(head);
    socket.write(body, () => {
      socket.on("data", (chunk: Buffer) => received.push(chunk));
      socket.resume();
    });
  });
}
