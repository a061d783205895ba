import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createServer, type AddressInfo, type Server as NetServer, type Socket } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import type { Hono } from "hono";
import type { AppEnv } from "./context.js";
import { deferContinue } from "./expect-continue.js";

export interface HttpServer {
  url: string;
  port: number;
  /** Stops accepting, lets in-flight requests finish for up to `drainMs`, then cuts what is left. */
  close(drainMs: number): Promise<void>;
  /** Cuts every open connection now (ends a drain early). */
  closeConnections(): void;
}

export class ListenError extends Error {}

/** How the server bounds its connections (docs/security.md, "Connections and request bodies"). */
export interface Transport {
  maxConnections: number;
  /** A request's head must have arrived this long after its first byte (Node's headersTimeout). */
  headersTimeoutMs: number;
  /** The backstop for a whole request, head and body (Node's requestTimeout); the body's own bounds cut first. */
  requestTimeoutMs: number;
  /** How often Node checks the two above: a request is cut at most this late. */
  checkIntervalMs: number;
}

/** Node's default 5s keep-alive is shorter than most load balancers' idle timeout; a mismatch drops requests. */
const KEEP_ALIVE_MS = 65_000;

/**
 * Caps open connections at `max`. Past it, the oldest connection with no request in flight (one still sending
 * its head, or idle between keep-alive requests) is closed to make room, so connections that never finish a
 * head cannot lock out real clients (they churn each other out); when every connection has a request in
 * flight, the new one is closed at once.
 */
function capConnections(server: Server, max: number): void {
  // In accept order: the first one without a request in flight is the oldest such.
  const open = new Set<Socket>();
  /** Requests of a connection being handled now; a connection absent here has none (a head still arriving, or idle). */
  const inFlight = new WeakMap<Socket, number>();
  server.on("connection", (socket: Socket) => {
    if (open.size >= max) {
      let evicted = false;
      for (const candidate of open) {
        if (!inFlight.has(candidate)) {
          open.delete(candidate);
          candidate.destroy();
          evicted = true;
          break;
        }
      }
      if (!evicted) {
        socket.destroy();
        return;
      }
    }
    open.add(socket);
    socket.once("close", () => open.delete(socket));
  });
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    inFlight.set(socket, (inFlight.get(socket) ?? 0) + 1);
    res.once("close", () => {
      const left = (inFlight.get(socket) ?? 1) - 1;
      if (left > 0) inFlight.set(socket, left);
      else inFlight.delete(socket);
    });
  });
}

function bind(server: Server | NetServer, host: string, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) => {
      const reason =
        err.code === "EADDRINUSE"
          ? "is already in use"
          : err.code === "EACCES"
            ? "needs more privileges"
            : err.code === "EADDRNOTAVAIL"
              ? "is not an address of this machine"
              : `cannot be used (${err.code ?? err.message})`;
      reject(new ListenError(`cannot listen: ${host}:${port} ${reason}`));
    });
    server.listen(port, host, () => resolve());
  });
}

/**
 * Fails with the ListenError listen() would give, before anything slow has started (the embedded database):
 * binds the address and lets it go at once. Another process may still take it in between; listen() then says so.
 */
export async function checkListenAddress(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  await bind(probe, host, port);
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

export async function listen(app: Hono<AppEnv>, host: string, port: number, transport: Transport): Promise<HttpServer> {
  const server = createAdaptorServer({
    fetch: app.fetch,
    // Node checks the head and request timeouts only this often (30 s by default): a trickled head would live
    // on for up to the timeout plus this.
    serverOptions: {
      connectionsCheckingInterval: transport.checkIntervalMs,
      headersTimeout: transport.headersTimeoutMs,
      requestTimeout: transport.requestTimeoutMs,
    },
  }) as Server;
  // Compatible with the shorter head timeout since Node 18: the head timer of a keep-alive connection's next
  // request starts at that request's first byte, and an idle connection is governed by keepAliveTimeout alone.
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  capConnections(server, transport.maxConnections);
  deferContinue(server);
  await bind(server, host, port);
  const bound = (server.address() as AddressInfo).port;
  const shownHost = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shownHost === "0.0.0.0" ? "127.0.0.1" : shownHost}:${bound}`,
    port: bound,
    close: (drainMs) =>
      new Promise<void>((resolve) => {
        const deadline = setTimeout(() => server.closeAllConnections(), drainMs);
        // A keep-alive connection turns idle once its in-flight response ends; close it then, not at the deadline.
        const sweep = setInterval(() => server.closeIdleConnections(), 50);
        server.close(() => {
          clearTimeout(deadline);
          clearInterval(sweep);
          resolve();
        });
        server.closeIdleConnections();
      }),
    closeConnections: () => server.closeAllConnections(),
  };
}
