import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";

// Issue 20, item 2: a login body of 16 MiB then a stall was held for up to 300 s (Node's requestTimeout). The
// small JSON routes take a few KiB (server.small_body_bytes); every body reserves from the process budget
// (server.body_budget_bytes); a body must end within server.body_timeout_ms and, after a grace, arrive at
// server.body_min_bytes_per_second, else 408 request_timeout and the connection closes. Short bounds here.

const KiB = 1024;

let gw: TestGateway;
let key: string;

beforeAll(async () => {
  gw = await startTestGateway({
    config: {
      server: {
        max_body_bytes: 64 * KiB,
        body_budget_bytes: 64 * KiB,
        body_timeout_ms: 2000,
        body_min_bytes_per_second: 200,
        body_min_rate_grace_ms: 1000,
      },
    },
  });
  await gw.services.auth.users.create({ email: "slow@example.test", password: "password-123" });
  ({ key } = await gw.services.auth.apiKeys.create({ user: "slow@example.test" }));
});

afterAll(async () => {
  await gw?.close();
});

interface RawAnswer {
  status: number;
  body: string;
  /** The server closed the connection (the socket ended without the client ending it). */
  closed: boolean;
}

/**
 * Writes a request head, then `send(socket)` writes (some of) the body as it likes; settles once the server has
 * answered and closed the connection, or after `giveUpMs` (then `closed` is false).
 */
function rawPost(
  path: string,
  headers: Record<string, string | number>,
  send: (socket: net.Socket) => void,
  giveUpMs = 8000,
): Promise<RawAnswer> {
  const { port } = new URL(gw.url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(port), "127.0.0.1");
    let text = "";
    const settle = (closed: boolean) => {
      clearTimeout(stop);
      socket.destroy();
      const [head = "", body = ""] = text.split("\r\n\r\n", 2);
      resolve({ status: Number(head.split(" ")[1] ?? 0), body, closed });
    };
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (text += chunk));
    socket.on("error", () => undefined);
    socket.on("close", () => settle(true));
    const stop = setTimeout(() => settle(false), giveUpMs);
    const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
    socket.write(`POST ${path} HTTP/1.1\r\nhost: gateway\r\n${lines.join("")}\r\n`);
    send(socket);
  });
}

const loginHead = (length: number) => ({ "content-type": "application/json", "content-length": length });
const code = (answer: RawAnswer) => (JSON.parse(answer.body) as { error: { code: string; message: string } }).error;

/** Writes `body` `bytes` at a time every `everyMs`, until the socket closes. */
function drip(body: Buffer, bytes: number, everyMs: number) {
  return (socket: net.Socket) => {
    let at = 0;
    const timer = setInterval(() => {
      if (socket.destroyed || at >= body.length) return clearInterval(timer);
      socket.write(body.subarray(at, at + bytes));
      at += bytes;
    }, everyMs);
    socket.once("close", () => clearInterval(timer));
  };
}

describe("the login route", () => {
  it("answers a body that stalls with 408 request_timeout, and closes the connection", async () => {
    const answer = await rawPost("/api/v1/auth/login", loginHead(1000), (socket) => socket.write('{"email":"slow@'));
    expect(answer.closed).toBe(true);
    expect(answer.status).toBe(408);
    expect(code(answer)).toMatchObject({ code: "request_timeout", message: expect.stringContaining("2000 ms") });
  });

  it("refuses a body over the small routes' cap with 413 before reading it", async () => {
    // Nothing of the body is ever sent: the answer comes from the declared length alone.
    const answer = await rawPost("/api/v1/auth/login", loginHead(16 * KiB + 1), () => undefined);
    expect(answer.status).toBe(413);
    expect(code(answer)).toMatchObject({ code: "request_too_large", message: expect.stringContaining(`${16 * KiB} bytes`) });
  });

  it("refuses a chunked body over the cap with 413 as it passes the cap", async () => {
    const chunk = Buffer.alloc(17 * KiB, 0x61);
    const answer = await rawPost("/api/v1/auth/login", { "content-type": "application/json", "transfer-encoding": "chunked" }, (socket) =>
      socket.write(`${chunk.length.toString(16)}\r\n${chunk.toString()}\r\n`),
    );
    expect(answer.status).toBe(413);
  });
});

it("cuts a body dripping below the minimum rate with 408", async () => {
  // 20 bytes every 200 ms: 100 bytes a second, half the minimum, and far from done at the total timeout.
  const body = Buffer.from(JSON.stringify({ model: "m1", messages: [{ role: "user", content: "x".repeat(4000) }] }));
  const answer = await rawPost(
    "/v1/chat/completions",
    { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": body.length },
    drip(body, 20, 200),
  );
  expect(answer.closed).toBe(true);
  expect(answer.status).toBe(408);
  expect(code(answer).code).toBe("request_timeout");
});

it("reserves every route's body from the process budget: a login waits for none while the budget is full", async () => {
  // A chat body that declares 60 KiB holds 60 KiB of the 64 KiB budget while it is (not) sent.
  const held = rawPost(
    "/v1/chat/completions",
    { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": 60 * KiB },
    (socket) => socket.write("{"),
  );
  await new Promise((resolve) => setTimeout(resolve, 200));
  const answer = await rawPost("/api/v1/auth/login", loginHead(8 * KiB), () => undefined);
  expect(answer.status).toBe(503);
  expect(code(answer).code).toBe("body_budget_exhausted");
  expect((await held).status).toBe(408);
});
