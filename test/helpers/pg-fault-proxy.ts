import { once } from "node:events";
import net from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { socketPath } from "../../src/db/embedded.js";

// A TCP proxy between gateway processes and PostgreSQL that makes the faults of a bad day on demand
// (docs/architecture.md, "Database faults"): `cut()` drops every connection at once (what pg_terminate_backend,
// a pooler restart or a failover does), `down()` drops them and refuses new ones until `up()` (an outage),
// `stall()` keeps every connection open but moves no byte either way until `resume()` (a partition that
// loses packets instead of refusing them). Bytes are relayed unchanged.

export interface PgFaultProxyStats {
  accepted: number;
  /** Connections dropped by cut() or down(). */
  cut: number;
  /** Connection attempts refused while down. */
  refused: number;
  open: number;
}

export interface PgFaultProxy {
  /** `databaseUrl` with its host and port replaced by the proxy's. */
  url: string;
  port: number;
  cut(): void;
  down(): void;
  up(): void;
  stall(): void;
  resume(): void;
  /** Cuts every connection every `everyMs` for `forMs`; resolves when done. */
  cutEvery(everyMs: number, forMs: number): Promise<void>;
  stats(): PgFaultProxyStats;
  close(): Promise<void>;
}

interface Pair {
  client: net.Socket;
  server: net.Socket;
  /** Chunks held while stalled, per direction, in order. */
  held: { toServer: Buffer[]; toClient: Buffer[] };
}

export async function startPgFaultProxy(databaseUrl: string): Promise<PgFaultProxy> {
  const target = new URL(databaseUrl);
  const targetHost = decodeURIComponent(target.hostname);
  const targetPort = Number(target.port || 5432);
  // A host that is a directory is the server's Unix socket there (the embedded server's, for the gateway).
  const connectTo = targetHost.startsWith("/") ? { path: socketPath(targetHost, targetPort) } : { host: targetHost, port: targetPort };
  const pairs = new Set<Pair>();
  const stats = { accepted: 0, cut: 0, refused: 0 };
  let refusing = false;
  let stalled = false;

  const relay = (from: net.Socket, to: net.Socket, held: Buffer[]) => {
    from.on("data", (chunk: Buffer) => {
      if (stalled) return void held.push(chunk);
      if (!to.write(chunk)) {
        from.pause();
        to.once("drain", () => from.resume());
      }
    });
    from.on("end", () => to.end());
  };

  const drop = (pair: Pair) => {
    if (!pairs.delete(pair)) return;
    pair.client.destroy();
    pair.server.destroy();
  };

  const server = net.createServer((client) => {
    if (refusing) {
      stats.refused++;
      client.resetAndDestroy();
      return;
    }
    stats.accepted++;
    client.setNoDelay(true);
    const upstream = net.connect(connectTo);
    upstream.setNoDelay(true);
    const pair: Pair = { client, server: upstream, held: { toServer: [], toClient: [] } };
    pairs.add(pair);
    relay(client, upstream, pair.held.toServer);
    relay(upstream, client, pair.held.toClient);
    for (const socket of [client, upstream]) {
      socket.on("error", () => drop(pair));
      socket.on("close", () => drop(pair));
    }
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as net.AddressInfo).port;
  const proxied = new URL(databaseUrl);
  proxied.hostname = "127.0.0.1";
  proxied.port = String(port);

  const cut = () => {
    for (const pair of [...pairs]) {
      stats.cut++;
      // A reset, as a dead server or a failover gives, rather than an orderly end.
      pair.client.resetAndDestroy();
      drop(pair);
    }
  };

  return {
    url: proxied.toString(),
    port,
    cut,
    down() {
      refusing = true;
      cut();
    },
    up() {
      refusing = false;
    },
    stall() {
      stalled = true;
    },
    resume() {
      stalled = false;
      for (const pair of pairs) {
        for (const chunk of pair.held.toServer.splice(0)) pair.server.write(chunk);
        for (const chunk of pair.held.toClient.splice(0)) pair.client.write(chunk);
      }
    },
    async cutEvery(everyMs, forMs) {
      const end = performance.now() + forMs;
      while (performance.now() < end) {
        await sleep(Math.min(everyMs, Math.max(0, end - performance.now())));
        cut();
      }
    },
    stats: () => ({ ...stats, open: pairs.size }),
    close: () =>
      new Promise<void>((resolve) => {
        refusing = true;
        for (const pair of [...pairs]) drop(pair);
        server.close(() => resolve());
      }),
  };
}
