import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";

// Issue 20, item 3: 20,000 connections that never finished their heads used every file descriptor, and a
// trickled head lived 81.7 s. Connections are capped (server.max_connections): past the cap the oldest
// connection without a request in flight is closed to make room, else the new one; a head must arrive within
// server.headers_timeout_ms, checked every server.connections_check_interval_ms. Small values here; the
// defaults are asserted in test/unit/body-limits.test.ts.

const CAP = 20;

let mock: MockUpstream;
/** The cap, and the default head timeout (so only the cap closes anything). */
let capped: TestGateway;
/** A short head timeout, checked often. */
let quick: TestGateway;
let key: string;

beforeAll(async () => {
  mock = await startMockUpstream();
  const models = {
    providers: { main: { protocol: "openai" as const, base_url: `${mock.url}/v1` } },
    models: { m1: { kind: "chat" as const, upstream: "m1", targets: ["main"] } },
  };
  capped = await startTestGateway({ config: { server: { max_connections: CAP }, ...models } });
  quick = await startTestGateway({ config: { server: { headers_timeout_ms: 1000, connections_check_interval_ms: 500 }, ...models } });
  await capped.services.auth.users.create({ email: "conn@example.test", password: "password-123" });
  ({ key } = await capped.services.auth.apiKeys.create({ user: "conn@example.test" }));
});

const opened: net.Socket[] = [];

afterAll(async () => {
  for (const socket of opened) socket.destroy();
  await quick?.close();
  await capped?.close();
  await mock?.close();
});

interface Held {
  socket: net.Socket;
  /** Settles once the server has closed the connection; `answered` is whether any byte came first. */
  closed: Promise<{ answered: boolean }>;
}

/** A connection that writes `head` (by default the start of a head that never ends) and then nothing. */
async function hold(gw: TestGateway, head = "GET /healthz HTTP/1.1\r\nhost: gateway\r\n"): Promise<Held> {
  const { port } = new URL(gw.url);
  const socket = net.connect(Number(port), "127.0.0.1");
  opened.push(socket);
  let answered = false;
  socket.on("data", () => (answered = true));
  socket.on("error", () => undefined);
  const closed = new Promise<{ answered: boolean }>((resolve) => socket.once("close", () => resolve({ answered })));
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  socket.write(head);
  return { socket, closed };
}

const isOpen = (held: Held) => !held.socket.destroyed && held.socket.readyState === "open";
/** Settles with whether `held` was closed by the server within `ms` (a bound far above the one under test). */
const closedWithin = (held: Held, ms: number) =>
  Promise.race([held.closed.then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms))]);

describe("with the cap filled by connections that never finish their heads", () => {
  it("keeps answering /healthz, /readyz and chat, closing the oldest idle connections to make room", async () => {
    const loris: Held[] = [];
    for (let i = 0; i < CAP; i++) loris.push(await hold(capped));
    for (const path of ["/healthz", "/readyz"]) {
      const res = await fetch(`${capped.url}${path}`, { headers: { connection: "close" } });
      expect(res.status, path).toBe(200);
    }
    const chat = await fetch(`${capped.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json", connection: "close" },
      body: JSON.stringify({ model: "m1", messages: [{ role: "user", content: "hi" }] }),
    });
    expect(chat.status).toBe(200);
    // The first new connection found the cap full: the oldest unfinished head made room, without an answer
    // (each answer closed its connection, so the next ones fitted).
    expect(await closedWithin(loris[0]!, 5000)).toBe(true);
    expect(await loris[0]!.closed).toEqual({ answered: false });
    expect(isOpen(loris[CAP - 1]!)).toBe(true);
    for (const held of loris) held.socket.destroy();
  });

  it("closes a new connection at once when every connection has a request in flight", async () => {
    // Complete heads whose bodies never come: each is a request being handled (its body being read).
    const busy: Held[] = [];
    for (let i = 0; i < CAP; i++) {
      busy.push(
        await hold(
          capped,
          "POST /api/v1/auth/login HTTP/1.1\r\nhost: gateway\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{",
        ),
      );
    }
    // Let the server see every head as a request.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const late = await hold(capped, "GET /healthz HTTP/1.1\r\nhost: gateway\r\n\r\n");
    expect(await closedWithin(late, 5000)).toBe(true);
    expect(await late.closed).toEqual({ answered: false });
    expect(busy.every(isOpen)).toBe(true);
    for (const held of busy) held.socket.destroy();
  });
});

it("closes a connection that trickles its head within the head timeout and the check interval", async () => {
  const trickle = await hold(quick, "GET /healthz HTTP/1.1\r\n");
  const timer = setInterval(() => trickle.socket.writable && trickle.socket.write("x"), 100);
  try {
    // 1 s head timeout, checked every 0.5 s; given 5 s, which Node's former 66 s and 30 s never meet.
    expect(await closedWithin(trickle, 5000)).toBe(true);
  } finally {
    clearInterval(timer);
  }
});
