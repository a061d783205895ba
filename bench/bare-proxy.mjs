// The Node ceiling for `npm run bench`: the least a @hono/node-server + undici proxy can do per chat request.
// The gateway does strictly more (auth, metering, PostgreSQL), so gateway/bare throughput says how much of
// what Node allows the gateway keeps.
//
//   node bench/bare-proxy.mjs --port 0 --upstream http://127.0.0.1:9090
//
// Prints its URL on stdout once listening; SIGTERM/SIGINT stop it.
//
// Why it is built this way (docs/architecture.md, "Rules", measured on the 2-core bench machine):
// - The body is read from Node's incoming stream, never through c.req.json()/arrayBuffer(): building a WHATWG
//   Request body per call doubled the CPU per request and brought 10-20 ms GC pauses at p99.
// - The upstream answer is piped from undici's Node stream straight into Node's response, so neither a WHATWG
//   ReadableStream nor a Response is built per call and SSE chunks leave as soon as they arrive.
//   `--response web` returns a Response over Readable.toWeb(body) instead, to measure what that costs.
import { createAdaptorServer } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { Hono } from "hono";
import { Readable } from "node:stream";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { Pool } from "undici";

// Headers that describe one hop, not the message; forwarding them would corrupt the next hop's framing.
const HOP = new Set(["connection", "keep-alive", "transfer-encoding", "te", "upgrade", "proxy-connection", "trailer", "host"]);

async function readBody(incoming) {
  const chunks = [];
  let size = 0;
  for await (const chunk of incoming) {
    chunks.push(chunk);
    size += chunk.length;
  }
  return chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
}

// stream.pipeline() would do this too, but it builds an AbortController per call and a DOMException when it
// finishes: about 6% of the proxy's CPU in a profile. A client that hangs up stops the upstream read; an
// upstream that fails mid-answer cuts the client's connection, so a truncated answer never looks complete.
function relay(from, to) {
  from.pipe(to);
  from.once("error", () => to.destroy());
  to.once("close", () => {
    if (!from.readableEnded) from.destroy();
  });
}

function sendError(outgoing, status, message) {
  if (outgoing.headersSent) return void outgoing.destroy();
  const body = JSON.stringify({ error: { message, type: "proxy_error", code: null, param: null } });
  outgoing.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  outgoing.end(body);
}

/** The proxy app; `upstream` is an origin (http://host:port), the request path is forwarded as is. */
export function createBareProxy({ upstream, connections = 256, response = "node" }) {
  // Enough keep-alive connections that the pool never queues at the load the bench puts on it.
  const pool = new Pool(upstream, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const app = new Hono();

  app.post("/v1/chat/completions", async (c) => {
    const { incoming, outgoing } = c.env;
    const body = await readBody(incoming);
    const headers = {};
    for (const [name, value] of Object.entries(incoming.headers)) if (!HOP.has(name)) headers[name] = value;
    headers["content-length"] = String(body.length);
    let res;
    try {
      res = await pool.request({ method: "POST", path: incoming.url, headers, body });
    } catch (err) {
      sendError(outgoing, 502, `upstream request failed: ${err.code ?? err.message}`);
      return RESPONSE_ALREADY_SENT;
    }
    const out = {};
    for (const [name, value] of Object.entries(res.headers)) if (!HOP.has(name)) out[name] = value;
    if (response === "web") return new Response(Readable.toWeb(res.body), { status: res.statusCode, headers: out });
    outgoing.writeHead(res.statusCode, out);
    // A stream's first bytes go out with the headers rather than after the next chunk.
    if (out["content-type"]?.startsWith("text/event-stream")) outgoing.flushHeaders();
    relay(res.body, outgoing);
    return RESPONSE_ALREADY_SENT;
  });

  return { app, close: () => pool.close() };
}

/** Starts the proxy; resolves once it listens. */
export async function startBareProxy({ upstream, port = 0, host = "127.0.0.1", response }) {
  const proxy = createBareProxy({ upstream, response });
  const server = createAdaptorServer({ fetch: proxy.app.fetch });
  server.keepAliveTimeout = 65_000;
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, resolve);
  });
  return {
    url: `http://${host}:${server.address().port}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await proxy.close();
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      port: { type: "string", default: "0" },
      host: { type: "string", default: "127.0.0.1" },
      upstream: { type: "string" },
      response: { type: "string", default: "node" },
    },
  });
  if (!values.upstream) {
    process.stderr.write("usage: node bench/bare-proxy.mjs --port N --upstream http://127.0.0.1:M\n");
    process.exit(2);
  }
  const upstream = new URL(values.upstream).origin;
  const proxy = await startBareProxy({ upstream, port: Number(values.port), host: values.host, response: values.response });
  process.stdout.write(`${proxy.url}\n`);
  const stop = () => void proxy.close().then(() => process.exit(0));
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
}
