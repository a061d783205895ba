import { createServer, request, type IncomingHttpHeaders, type OutgoingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A tiny test-only upstream in front of the mock upstream, for the chat fallback tests. The gateway never
 * forwards client headers upstream, so per-target faults are chosen here: `inject` adds the mock's fault headers
 * (docs/mock-upstream.md) to every proxied request, or `respond` answers a fixed status, headers and body
 * without reaching the mock at all. Every request that arrives is counted, so a test can prove a target was
 * (or was never) called.
 */
export interface FixedAnswer {
  status: number;
  headers?: OutgoingHttpHeaders;
  body: string;
}

export interface UpstreamProxy {
  /** `http://127.0.0.1:PORT/v1`: an `openai` provider's `base_url`. */
  baseUrl: string;
  /** Requests that reached this proxy so far. */
  requests: number;
  /** Mock fault headers added to each proxied request; replace per test. */
  inject: Record<string, string>;
  /** When set, answered instead of proxying. */
  respond: FixedAnswer | undefined;
  /** Clears faults (not the counter). */
  reset(): void;
  close(): Promise<void>;
}

/** `targetUrl`: the mock's root URL (without `/v1`); request paths are passed through unchanged. */
export async function startUpstreamProxy(targetUrl: string): Promise<UpstreamProxy> {
  const target = new URL(targetUrl);
  const server = createServer((req, res) => {
    proxy.requests += 1;
    const fixed = proxy.respond;
    if (fixed) {
      req.resume();
      res.writeHead(fixed.status, { "content-type": "application/json", ...fixed.headers });
      res.end(fixed.body);
      return;
    }
    const headers: IncomingHttpHeaders = { ...req.headers, ...proxy.inject, host: target.host };
    const upstream = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers }, (upstreamRes) => {
      res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
      upstreamRes.pipe(res);
      // A mock that cuts its connection (x-mock-drop-after) is cut through to the gateway too.
      upstreamRes.on("aborted", () => res.destroy());
      upstreamRes.on("error", () => res.destroy());
    });
    upstream.on("error", () => res.destroy());
    // The gateway gave up (timeout, client gone): stop the mock's work as well.
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const proxy: UpstreamProxy = {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests: 0,
    inject: {},
    respond: undefined,
    reset() {
      proxy.inject = {};
      proxy.respond = undefined;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
  return proxy;
}
