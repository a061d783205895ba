import type { IncomingMessage, Server, ServerResponse } from "node:http";

// A client that sends `Expect: 100-continue` waits for `100 Continue` before its body (curl does for bodies
// over 1 MiB), so a refusal sent first costs it no upload at all. Node answers 100 Continue itself, before the
// app has seen the request, unless the server listens for `checkContinue`; the gateway's listener hands the
// request to the app like any other, and the body reader sends 100 Continue only when it is about to read a
// body it accepts. A refusal (413, the body budget's 503, 415) goes out without it, and Node closes the
// connection after such an answer (the client may send its body anyway).

/** Hands `Expect: 100-continue` requests to the app without answering 100 Continue first. */
export function deferContinue(server: Server): void {
  server.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => server.emit("request", req, res));
}

/** Node's own test of the requests it gives to `checkContinue`: HTTP/1.1 and a 100-continue expectation. */
const CONTINUE = /(?:^|\W)100-continue(?:$|\W)/i;

/** Sends 100 Continue if the client waits for it; `expect` is the request's Expect header. */
export function sendContinue(incoming: IncomingMessage, outgoing: ServerResponse, expect: string | undefined): void {
  if (expect === undefined || incoming.httpVersion !== "1.1" || !CONTINUE.test(expect)) return;
  if (!outgoing.headersSent) outgoing.writeContinue();
}
