import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { curlPost, nodePost, type NodeMode } from "../helpers/body-clients.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { judge } from "../helpers/systemone.js";

// A refused body's answer reaches the client however it sends the body (docs/api.md, "Request bodies"): the
// server-wide cap and the evaluation routes' own cap (413), the body budget (503) and the content type (415),
// to Node's http client (declared length written 1 MiB at a time, or chunked), fetch and curl. A client that
// sends `Expect: 100-continue` gets a refusal before it sends its body, and 100 Continue when the body is
// taken. Small caps keep it quick; one realistic case sends 64 MiB + 64 KiB to the default 64 MiB cap.

const KiB = 1024;
/** More than loopback's socket buffers hold: the client is still sending when the refusal goes out. */
const BIG = 16 * 1024 * KiB;
const SERVER_CAP = 64 * KiB;
const ROUTE_CAP = 512 * KiB;
/** The body budget of `tight`, far below its route's default 64 MiB cap: a body between the two is refused by the budget alone. */
const BUDGET = 256 * KiB;

let mock: MockUpstream;
let db: TestDatabase;
let dir: string;
/** The small caps. */
let gw: TestGateway;
/** The default caps and a small body budget. */
let tight: TestGateway;
/** The default caps: 64 MiB on the evaluation routes. */
let full: TestGateway;
let key: string;

beforeAll(async () => {
  mock = await startMockUpstream();
  db = await createTestDatabase();
  dir = await mkdtemp(path.join(os.tmpdir(), "gw-body-refusals-"));
  const config = (server: Record<string, number>, systemone: Record<string, number>) => ({
    server,
    systemone,
    providers: { main: { protocol: "systemone" as const, base_url: mock.url } },
    // The chat route's refusals come before its model is looked up: it needs none.
    models: { judge: judge(["main"]) },
  });
  gw = await startTestGateway({ db, config: config({ max_body_bytes: SERVER_CAP }, { max_body_bytes: ROUTE_CAP }) });
  tight = await startTestGateway({ db, config: config({}, { admission_budget_bytes: BUDGET }) });
  full = await startTestGateway({ db, config: config({}, {}) });
  await gw.services.auth.users.create({ email: "bodies@example.test", password: "password-123" });
  ({ key } = await gw.services.auth.apiKeys.create({ user: "bodies@example.test" }));
});

afterAll(async () => {
  await full?.close();
  await tight?.close();
  await gw?.close();
  await db?.drop();
  await mock?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const json = () => ({ authorization: `Bearer ${key}`, "content-type": "application/json" });
/** A body of `n` bytes: refusals come before any parsing, so it need not be JSON. */
const bytes = (n: number) => Buffer.alloc(n, 0x61);
const evaluation = () => Buffer.from(JSON.stringify({ model: "judge", state: "hi", questions: { q: { type: "noul" } } }));

function expectRefusal(answer: { status: number; text: string }, status: number, code: string) {
  expect(answer.status).toBe(status);
  expect(JSON.parse(answer.text).error).toMatchObject({ code, request_id: expect.stringMatching(/^req_/) });
}

/** The gateway still serves, on a new connection: its health and a small valid evaluation. */
async function expectServing(gateway: TestGateway) {
  expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
  const ok = await fetch(`${gateway.url}/v1/systemone`, { method: "POST", headers: json(), body: evaluation() });
  expect(ok.status).toBe(200);
}

type Send = (url: string, body: Buffer, headers?: Record<string, string>) => Promise<{ status: number; text: string }>;

const node =
  (mode: NodeMode): Send =>
  async (url, body, headers = json()) => {
    const answer = await nodePost(url, headers, body, mode);
    // The client saw its answer and no reset: a client error after it would mean the connection was cut.
    expect(answer.error).toBeUndefined();
    return answer;
  };

let files = 0;
/** curl sends `Expect: 100-continue` for these bodies (over 1 MiB) unless `args` empty the header. */
const curl =
  (...args: string[]): Send =>
  (url, body, headers = json()) =>
    curlPost(url, headers, body, path.join(dir, `body-${files++}`), args);

const fetchPost: Send = async (url, body, headers = json()) => {
  const res = await fetch(url, { method: "POST", headers, body });
  return { status: res.status, text: await res.text() };
};

const clients: [string, Send][] = [
  ["Node http, declared length", node("length")],
  ["Node http, chunked", node("chunked")],
  ["fetch", fetchPost],
  ["curl --data-binary", curl()],
  ["curl --data-binary without Expect", curl("-H", "Expect:")],
];

describe.each(clients)("%s", (_name, send) => {
  it("reads the evaluation route's own 413 and its envelope; the gateway serves on", async () => {
    expectRefusal(await send(`${gw.url}/v1/systemone`, bytes(BIG)), 413, "request_too_large");
    await expectServing(gw);
  });

  it("reads the server-wide cap's 413 on another route", async () => {
    expectRefusal(await send(`${gw.url}/v1/chat/completions`, bytes(BIG)), 413, "request_too_large");
    await expectServing(gw);
  });

  it("reads the body budget's 503", async () => {
    const answer = await send(`${tight.url}/v1/systemone`, bytes(BIG));
    expectRefusal(answer, 503, "body_budget_exhausted");
    await expectServing(tight);
  });

  it("reads the 415 of a body it sent with another content type", async () => {
    const headers = { authorization: `Bearer ${key}`, "content-type": "text/plain" };
    expectRefusal(await send(`${gw.url}/v1/chat/completions`, bytes(BIG), headers), 415, "unsupported_media_type");
    await expectServing(gw);
  });
});

describe("Expect: 100-continue", () => {
  it("gets the 413 without 100 Continue, and sends no body", async () => {
    const answer = await nodePost(`${gw.url}/v1/systemone`, json(), bytes(4 * ROUTE_CAP), "expect");
    expectRefusal(answer, 413, "request_too_large");
    expect(answer.continued).toBe(false);
    expect(answer.headers.connection).toBe("close");
    await expectServing(gw);
  });

  it("gets the body budget's 503 without 100 Continue", async () => {
    const answer = await nodePost(`${tight.url}/v1/systemone`, json(), bytes(BIG), "expect");
    expectRefusal(answer, 503, "body_budget_exhausted");
    expect(answer.continued).toBe(false);
    await expectServing(tight);
  });

  it("gets 100 Continue for a body under the cap, and its answer", async () => {
    const answer = await nodePost(`${gw.url}/v1/systemone`, json(), evaluation(), "expect");
    expect(answer.continued).toBe(true);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.text)).toMatchObject({ model: "judge", answers: { q: expect.anything() } });
  });

  it("curl, which sends it for a body over 1 MiB, gets the 413 without 100 Continue", async () => {
    const answer = await curlPost(`${gw.url}/v1/systemone`, json(), bytes(2 * 1024 * KiB), path.join(dir, "expect-over"));
    expect(answer.expected).toBe(true);
    expect(answer.continued).toBe(false);
    expectRefusal(answer, 413, "request_too_large");
  });

  it("curl gets 100 Continue for a body under the cap", async () => {
    const answer = await curlPost(`${gw.url}/v1/systemone`, json(), evaluation(), path.join(dir, "expect-under"), [
      "-H",
      "Expect: 100-continue",
    ]);
    expect(answer.continued).toBe(true);
    expect(answer.status).toBe(200);
  });
});

describe("the realistic case", () => {
  it("64 MiB + 64 KiB to the 64 MiB cap, declared and written 1 MiB at a time, reads its 413", async () => {
    expectRefusal(await node("length")(`${full.url}/v1/systemone`, bytes(64 * 1024 * KiB + 64 * KiB)), 413, "request_too_large");
    await expectServing(full);
  });
});
