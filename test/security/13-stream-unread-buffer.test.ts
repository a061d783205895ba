import { once } from "node:events";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";

// Issue 20, item 13: what one stream whose client stops reading makes the gateway hold. The upstream streams as
// fast as TCP lets it; the clients never read. The gateway's response buffer stays near Node's high-water mark
// (far under 1 MiB) and the upstream is paused: its writes stop, its TCP window does the rest. What the kernel
// queues on the client's socket is the operating system's (docs/security.md, "Streams").

const READERS = 10;
const MiB = 1024 * 1024;
const chunk = `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", created: 1, model: "up", choices: [{ index: 0, delta: { content: "hello ".repeat(50) }, finish_reason: null }] })}\n\n`;

let upstream: http.Server;
let gw: TestGateway;
let written = 0;

beforeAll(async () => {
  upstream = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      // Endless, as fast as the connection takes it.
      const pump = () => {
        while (!res.destroyed) {
          written += chunk.length;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
      };
      pump();
    });
  });
  upstream.listen(0, "127.0.0.1");
  await once(upstream, "listening");
  gw = await startTestGateway({
    config: {
      providers: { up: { protocol: "openai", base_url: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1` } },
      models: { m: { kind: "chat", upstream: "up", targets: ["up"] } },
      plans: { basic: { daily_tokens: 1_000_000_000, context_limit: 100_000 } },
      default_plan: "basic",
    },
  });
});

afterAll(async () => {
  vi.restoreAllMocks();
  await gw?.close();
  upstream?.closeAllConnections();
  upstream?.close();
});

describe("a stream its client does not read (issue 20, item 13)", () => {
  it("holds under 1 MiB in the gateway's response buffer, and pauses the upstream", async () => {
    const user = await gw.services.auth.users.create({ email: "idle@example.test", password: "password-123456" });
    const { key } = await gw.services.auth.apiKeys.create({ user: user.id });
    const gwPort = Number(new URL(gw.url).port);
    const writeHead = vi.spyOn(http.ServerResponse.prototype, "writeHead");
    const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "Talk" }], stream: true });
    const clients = Array.from({ length: READERS }, () => {
      const socket = net.connect(gwPort, "127.0.0.1");
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nauthorization: Bearer ${key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
      );
      // Never reads.
      socket.pause();
      return socket;
    });
    try {
      // Until the upstream is held back: its writes stop once every buffer on the way is full.
      let previous = -1;
      for (let i = 0; i < 100 && written !== previous; i++) {
        previous = written;
        await sleep(300);
      }
      expect(written).toBe(previous);
      const relayed = (writeHead.mock.contexts as http.ServerResponse[]).filter((res) => res.socket?.localPort === gwPort);
      expect(relayed).toHaveLength(READERS);
      for (const res of relayed) expect(res.writableLength).toBeLessThan(MiB);
    } finally {
      for (const socket of clients) socket.destroy();
    }
  });
});
