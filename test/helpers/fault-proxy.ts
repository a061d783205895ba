import { once } from "node:events";
import http from "node:http";
import type { AddressInfo } from "node:net";

// The gateway forwards no client headers upstream (but anthropic-beta to anthropic targets), so tests inject the mock upstream's fault headers with
// this proxy (docs/mock-upstream.md): per provider, through its base_url (`proxy.baseUrl({ "x-mock-drop-after": 3 })`),
// or for every request through `inject`; `respond` answers a fixed status, headers and body without reaching the
// mock at all. Every request is recorded, with whether the gateway hung up on it before its answer ended.

export interface ProxiedRequest {
  path: string;
  /** The headers the gateway sent (before the fault headers were added). */
  headers: http.IncomingHttpHeaders;
  faults: Record<string, string>;
  /** The gateway closed the connection before the answer was complete (its upstream call was aborted). */
  abortedByGateway: boolean;
  /** The answer ended (completely, or cut on purpose by an upstream drop). */
  done: boolean;
}

export interface FixedAnswer {
  status: number;
  headers?: http.OutgoingHttpHeaders;
  body: string;
}

export interface FaultProxy {
  url: string;
  /** A provider base_url (…/v1) whose requests carry `faults` as headers. */
  baseUrl(faults?: Record<string, string | number>): string;
  requests: ProxiedRequest[];
  /** Fault headers added to every request (after the base_url's own); replace per test. */
  inject: Record<string, string>;
  /** When set, answered instead of proxying. */
  respond: FixedAnswer | undefined;
  /** Clears `inject` and `respond` (not the recorded requests). */
  reset(): void;
  close(): Promise<void>;
}

export async function startFaultProxy(upstream: string): Promise<FaultProxy> {
  const target = new URL(upstream);
  const requests: ProxiedRequest[] = [];
  const server = http.createServer((req, res) => {
    const match = /^\/f\/([^/]*)(\/.*)$/.exec(req.url ?? "");
    const faults = { ...Object.fromEntries(new URLSearchParams(decodeURIComponent(match?.[1] ?? ""))), ...proxy.inject };
    const record: ProxiedRequest = {
      path: match?.[2] ?? req.url ?? "",
      headers: req.headers,
      faults,
      abortedByGateway: false,
      done: false,
    };
    requests.push(record);
    const fixed = proxy.respond;
    if (fixed) {
      req.resume();
      res.writeHead(fixed.status, { "content-type": "application/json", ...fixed.headers });
      res.end(fixed.body);
      record.done = true;
      return;
    }
    let upstreamCut = false;
    const headers = { ...req.headers, ...faults, host: target.host };
    const out = http.request({ host: target.hostname, port: target.port, method: req.method, path: record.path, headers }, (upRes) => {
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      upRes.on("data", (chunk: Buffer) => res.write(chunk));
      upRes.on("end", () => res.end());
      upRes.on("close", () => {
        if (upRes.complete) return;
        // The upstream dropped the connection: drop ours too, after the bytes already written reach the gateway.
        upstreamCut = true;
        setImmediate(async () => {
          const socket = res.socket;
          if (socket && socket.writableLength > 0) await once(socket, "drain").catch(() => {});
          socket?.destroy();
        });
      });
    });
    out.on("error", () => res.destroy());
    req.pipe(out);
    res.on("close", () => {
      record.done = true;
      if (!res.writableFinished && !upstreamCut) {
        record.abortedByGateway = true;
        out.destroy();
      }
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const proxy: FaultProxy = {
    url,
    inject: {},
    respond: undefined,
    reset() {
      proxy.inject = {};
      proxy.respond = undefined;
    },
    baseUrl: (faults = {}) => {
      const spec = new URLSearchParams(Object.entries(faults).map(([k, v]): [string, string] => [k, String(v)])).toString();
      return `${url}/f/${encodeURIComponent(spec || "none")}/v1`;
    },
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return proxy;
}
