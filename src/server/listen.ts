import type { Server } from "node:http";
import { createServer, type AddressInfo, type Server as NetServer } from "node:net";
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

export async function listen(app: Hono<AppEnv>, host: string, port: number): Promise<HttpServer> {
  const server = createAdaptorServer({ fetch: app.fetch }) as Server;
  // Node's default 5s keep-alive is shorter than most load balancers' idle timeout; a mismatch drops requests.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
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
