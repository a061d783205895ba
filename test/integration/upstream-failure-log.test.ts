import { Writable } from "node:stream";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { freePort } from "../../src/db/free-port.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { createLogger } from "../../src/logger.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";

// What the operator's log says about upstream failures (docs/operations.md, "Upstream failures in the log"): one
// warn line per failed attempt and one per fallback, with provider, models, attempt, upstream status or error
// class and request id, so that a wrong base_url, a rejected provider key and an outage read differently; never
// the upstream body, a provider key or a URL's path.

const SECRET = "upstream-secret-detail";
const KEYS = { refused: "sk-refused-provider-key", rejecting: "sk-rejecting-provider-key", down: "sk-down-provider-key" };
const UPSTREAM = "mock-gpt-small";

let mock: MockUpstream;
/** Answers 401 with a secret in its body: a revoked provider key. */
let rejecting: FaultProxy;
/** Answers 503: an outage. */
let down: FaultProxy;
/** In front of the mock, to cut streams. */
let cutter: FaultProxy;
let gw: TestGateway;
let client: OpenAI;
let closedPort: number;
const logLines: string[] = [];

type Line = Record<string, unknown>;
const linesOf = (requestId: string): Line[] =>
  logLines.map((l) => JSON.parse(l) as Line).filter((l) => l.req_id === requestId && l.level === 40);

beforeAll(async () => {
  mock = await startMockUpstream();
  rejecting = await startFaultProxy(mock.url);
  down = await startFaultProxy(mock.url);
  cutter = await startFaultProxy(mock.url);
  closedPort = await freePort();
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(chunk.toString());
      done();
    },
  });
  const model = (targets: string[]) => ({ kind: "chat" as const, upstream: UPSTREAM, targets });
  gw = await startTestGateway({
    logger: createLogger("info", sink),
    config: {
      providers: {
        refused: { protocol: "openai", base_url: `http://127.0.0.1:${closedPort}/v1?key=${KEYS.refused}`, api_key: KEYS.refused },
        nowhere: { protocol: "openai", base_url: "http://gateway-test-host.invalid/v1" },
        plaintext: { protocol: "openai", base_url: `https://127.0.0.1:${new URL(down.url).port}/v1` },
        rejecting: { protocol: "openai", base_url: rejecting.baseUrl(), api_key: KEYS.rejecting },
        down: { protocol: "openai", base_url: down.baseUrl(), api_key: KEYS.down },
        cut: { protocol: "openai", base_url: cutter.baseUrl({ "x-mock-drop-after": 2 }) },
        ok: { protocol: "openai", base_url: mock.baseUrl },
      },
      models: {
        "m-refused": model(["refused", "ok"]),
        "m-dns": model(["nowhere"]),
        "m-tls": model(["plaintext"]),
        "m-rejected": model(["rejecting", "ok"]),
        "m-outage": model(["down", "refused"]),
        "m-cut": model(["cut"]),
        "m-fine": model(["ok"]),
      },
      plans: { free: { daily_tokens: 10_000_000, context_limit: 128_000 } },
    },
  });
  await gw.services.auth.users.create({ email: "ops@example.test", password: "password-123" });
  const key = (await gw.services.auth.apiKeys.create({ user: "ops@example.test" })).key;
  client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await rejecting?.close();
  await down?.close();
  await cutter?.close();
  await mock?.close();
});

beforeEach(() => {
  rejecting.respond = { status: 401, body: JSON.stringify({ error: { message: `invalid key ${SECRET}` } }) };
  down.respond = { status: 503, body: JSON.stringify({ error: { message: `overloaded ${SECRET}` } }) };
});

const messages = [{ role: "user" as const, content: "Where did my request go?" }];

/** A chat request; the request id whatever the answer. */
async function chat(model: string): Promise<{ status: number; requestId: string }> {
  const { response } = await client.chat.completions
    .create({ model, messages })
    .withResponse()
    .catch((err: unknown) => {
      if (err instanceof OpenAI.APIError) return { response: { status: err.status, headers: err.headers } };
      throw err;
    });
  return { status: response.status, requestId: response.headers.get("x-request-id")! };
}

describe("a failed upstream attempt in the operator's log", () => {
  it("a closed port: connection_refused, its host, the attempt, and the fallback that followed", async () => {
    const { status, requestId } = await chat("m-refused");
    expect(status).toBe(200);
    const [failed, fallback, ...rest] = linesOf(requestId);
    expect(rest).toEqual([]);
    expect(failed).toMatchObject({
      msg: "UPSTREAM_ATTEMPT_FAILED",
      req_id: requestId,
      provider: "refused",
      protocol: "openai",
      upstream_host: `127.0.0.1:${closedPort}`,
      model: "m-refused",
      upstream_model: UPSTREAM,
      attempt: 1,
      failure: "connect",
      upstream_status: null,
      error_class: "connection_refused",
      fallback: true,
      next_provider: "ok",
    });
    expect(failed!.hint).toContain("base_url");
    expect(fallback).toMatchObject({ msg: "UPSTREAM_FALLBACK", from_provider: "refused", to_provider: "ok", attempt: 2 });
  });

  it("an unknown host is dns, https to a plain-HTTP port is tls", async () => {
    const dns = await chat("m-dns");
    expect(dns.status).toBe(502);
    expect(linesOf(dns.requestId)).toEqual([expect.objectContaining({ provider: "nowhere", error_class: "dns", fallback: false })]);
    const tls = await chat("m-tls");
    expect(tls.status).toBe(502);
    expect(linesOf(tls.requestId)).toEqual([expect.objectContaining({ provider: "plaintext", error_class: "tls", fallback: false })]);
  });

  it("a rejected provider key: upstream_status 401, no fallback (it is final), a hint naming api_key", async () => {
    const { status, requestId } = await chat("m-rejected");
    expect(status).toBe(502);
    const lines = linesOf(requestId);
    expect(lines).toEqual([
      expect.objectContaining({
        msg: "UPSTREAM_ATTEMPT_FAILED",
        provider: "rejecting",
        attempt: 1,
        failure: "status",
        upstream_status: 401,
        error_class: null,
        fallback: false,
      }),
    ]);
    expect(lines[0]!.hint).toContain("api_key");
    expect(lines[0]).not.toHaveProperty("next_provider");
  });

  it("an outage: 503 on the first attempt, then the second target's own failure as attempt 2", async () => {
    const { status, requestId } = await chat("m-outage");
    expect(status).toBe(502);
    const lines = linesOf(requestId);
    expect(lines.map((l) => [l.msg, l.provider ?? l.from_provider, l.attempt, l.upstream_status, l.error_class, l.fallback])).toEqual([
      ["UPSTREAM_ATTEMPT_FAILED", "down", 1, 503, null, true],
      ["UPSTREAM_FALLBACK", "down", 2, 503, undefined, undefined],
      ["UPSTREAM_ATTEMPT_FAILED", "refused", 2, null, "connection_refused", false],
    ]);
    expect(lines[0]!.hint).toContain("outage");
  });

  it("a stream cut after it began: one UPSTREAM_STREAM_INTERRUPTED line", async () => {
    const { data: stream, response } = await client.chat.completions.create({ model: "m-cut", messages, stream: true }).withResponse();
    const requestId = response.headers.get("x-request-id")!;
    // The gateway ends the stream with an in-band error event, which the SDK throws.
    const read = async () => {
      for await (const chunk of stream) void chunk;
    };
    await expect(read()).rejects.toThrow(/ended unexpectedly/);
    expect(linesOf(requestId)).toEqual([
      expect.objectContaining({ msg: "UPSTREAM_STREAM_INTERRUPTED", provider: "cut", attempt: 1, fallback: false }),
    ]);
  });

  it("a request answered at once logs no warning", async () => {
    const { status, requestId } = await chat("m-fine");
    expect(status).toBe(200);
    expect(linesOf(requestId)).toEqual([]);
  });

  it("never logs the upstream body, a provider key or a base URL's query", () => {
    const all = logLines.join("");
    expect(all).not.toContain(SECRET);
    for (const key of Object.values(KEYS)) expect(all).not.toContain(key);
  });
});
