import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createAdaptorServer } from "@hono/node-server";
import { createMockUpstreamApp } from "./app.js";

export interface MockUpstream {
  /** Root URL, e.g. http://127.0.0.1:PORT. */
  url: string;
  /** `url` + "/v1": what the OpenAI SDK (and an `openai` provider's `base_url`) takes. */
  baseUrl: string;
  port: number;
  /** Stops at once, cutting open keep-alive and streaming connections so callers never wait on them. */
  close(): Promise<void>;
}

export async function startMockUpstream(opts: { host?: string; port?: number; apiKey?: string } = {}): Promise<MockUpstream> {
  const host = opts.host ?? "127.0.0.1";
  const app = createMockUpstreamApp(opts.apiKey === undefined ? {} : { apiKey: opts.apiKey });
  const server = createAdaptorServer({ fetch: app.fetch }) as Server;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  // A wildcard bind is reachable on loopback; brackets make an IPv6 literal usable in a URL.
  const reachable = host === "0.0.0.0" ? "127.0.0.1" : host === "::" ? "::1" : host;
  const url = `http://${reachable.includes(":") ? `[${reachable}]` : reachable}:${port}`;
  return {
    url,
    baseUrl: `${url}/v1`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
