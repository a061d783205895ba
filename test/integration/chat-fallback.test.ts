import { Writable } from "node:stream";
import OpenAI from "openai";
import type { ChatCompletionChunk } from "openai/resources/chat/completions";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { freePort } from "../../src/db/free-port.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { createLogger } from "../../src/logger.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { validateOpenAI } from "../helpers/openapi.js";
import { quiesce } from "../helpers/metering-checks.js";

// Provider fallback on POST /v1/chat/completions: which upstream failures move on to the next target, which
// are final, what the client, the request log and the ledger see, and that no upstream secret leaks.

const SECRET = "upstream-secret-detail";
const UPSTREAM = "mock-gpt-small";

let mock: MockUpstream;
/** Targets a and b: proxies in front of the mock that add fault headers and count what reaches them. */
let a: FaultProxy;
let b: FaultProxy;
let gw: TestGateway;
let key: string;
let direct: OpenAI;
const logLines: string[] = [];
/** Every status line, header and body the gateway sent in this file, checked for leaks at the end. */
const seen: string[] = [];

beforeAll(async () => {
  mock = await startMockUpstream();
  a = await startFaultProxy(mock.url);
  b = await startFaultProxy(mock.url);
  const closedPort = await freePort();
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
        a: { protocol: "openai", base_url: a.baseUrl(), api_key: "sk-provider-a" },
        b: { protocol: "openai", base_url: b.baseUrl(), api_key: "sk-provider-b" },
        dead: { protocol: "openai", base_url: `http://127.0.0.1:${closedPort}/v1` },
        slow: { protocol: "openai", base_url: a.baseUrl(), timeouts: { first_byte_ms: 200 } },
      },
      models: { "m-fb": model(["a", "b"]), "m-dead": model(["dead", "b"]), "m-slow": model(["slow", "b"]) },
      plans: { free: { daily_tokens: 10_000_000, context_limit: 128_000 } },
    },
  });
  await gw.services.auth.users.create({ email: "fallback@example.test", password: "password-123" });
  key = (await gw.services.auth.apiKeys.create({ user: "fallback@example.test" })).key;
  direct = new OpenAI({ apiKey: "unused", baseURL: mock.baseUrl, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await a?.close();
  await b?.close();
  await mock?.close();
});

beforeEach(() => {
  a.reset();
  b.reset();
});

const messages = [{ role: "user" as const, content: "Tell me about fallbacks" }];

async function chat(model: string, extra: Record<string, unknown> = {}) {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages, ...extra }),
  });
  const text = await res.text();
  seen.push(`${res.status} ${JSON.stringify([...res.headers])} ${text}`);
  return { res, text, requestId: res.headers.get("x-request-id")! };
}

const settled = () => quiesce(gw);

async function logRow(requestId: string) {
  await settled();
  const { rows } = await gw.db.pool.query<{ provider: string | null; fallback_path: string[]; status: number; error_class: string | null }>(
    "select provider, fallback_path, status, error_class from request_logs where request_id = $1",
    [requestId],
  );
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

/** The request's hold and the account's pending debits after it finished. */
async function expectHold(requestId: string, status: "posted" | "voided") {
  await settled();
  const hold = await gw.db.pool.query<{ status: string }>("select status from quota_holds where request_id = $1", [requestId]);
  expect(hold.rows).toEqual([{ status }]);
  const account = await gw.db.pool.query<{ p: string }>("select coalesce(sum(debits_pending), 0)::text as p from quota_accounts");
  expect(account.rows[0]!.p).toBe("0");
}

const expectedContent = async () => (await direct.chat.completions.create({ model: UPSTREAM, messages })).choices[0]!.message.content;

function expectErrorEnvelope(text: string, requestId: string) {
  const body = JSON.parse(text) as { error: { request_id: string } };
  expect(validateOpenAI("ErrorResponse", body)).toEqual([]);
  expect(body.error.request_id).toBe(requestId);
  return body.error;
}

describe("fallback to the next target", () => {
  it.each([503, 500, 502, 504, 429, 529])("a answers %i → b answers", async (status) => {
    a.inject = { "x-mock-status": String(status), "x-mock-retry-after": "3" };
    const before = { a: a.requests.length, b: b.requests.length };
    const { res, text, requestId } = await chat("m-fb");
    expect(res.status).toBe(200);
    const body = JSON.parse(text) as { model: string; choices: { message: { content: string } }[] };
    expect(validateOpenAI("CreateChatCompletionResponse", body)).toEqual([]);
    expect(body.model).toBe("m-fb");
    expect(body.choices[0]!.message.content).toBe(await expectedContent());
    expect(res.headers.get("retry-after")).toBeNull();
    expect({ a: a.requests.length - before.a, b: b.requests.length - before.b }).toEqual({ a: 1, b: 1 });
    expect(await logRow(requestId)).toMatchObject({ provider: "b", fallback_path: ["a"], status: 200, error_class: null });
    await expectHold(requestId, "posted");
  });

  it("a refuses the connection → b answers", async () => {
    const { res, requestId } = await chat("m-dead");
    expect(res.status).toBe(200);
    expect(await logRow(requestId)).toMatchObject({ provider: "b", fallback_path: ["dead"], status: 200 });
    await expectHold(requestId, "posted");
  });

  it("a times out before the first byte → b answers", async () => {
    a.inject = { "x-mock-delay-ms": "2000" };
    const before = b.requests.length;
    const { res, text, requestId } = await chat("m-slow");
    expect(res.status).toBe(200);
    expect((JSON.parse(text) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe(await expectedContent());
    expect(b.requests.length - before).toBe(1);
    expect(await logRow(requestId)).toMatchObject({ provider: "b", fallback_path: ["slow"], status: 200 });
    await expectHold(requestId, "posted");
  });

  it("a stream whose first target answers 503 is served by b", async () => {
    a.inject = { "x-mock-status": "503" };
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const { data: stream, response } = await client.chat.completions.create({ model: "m-fb", messages, stream: true }).withResponse();
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    for (const chunk of chunks) {
      expect(validateOpenAI("CreateChatCompletionStreamResponse", chunk)).toEqual([]);
      expect(chunk.model).toBe("m-fb");
    }
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe(await expectedContent());
    const requestId = response.headers.get("x-request-id")!;
    expect(await logRow(requestId)).toMatchObject({ provider: "b", fallback_path: ["a"], status: 200 });
    await expectHold(requestId, "posted");
  });
});

describe("invalid answers before the first byte count as a bad gateway", () => {
  it.each([
    ["a 200 that is not JSON", { status: 200, body: "<html>oops</html>" }],
    ["a JSON array instead of an object", { status: 200, body: "[1,2,3]" }],
  ])("%s from a → b answers", async (_name, answer) => {
    a.respond = answer;
    const before = b.requests.length;
    const { res, requestId } = await chat("m-fb");
    expect(res.status).toBe(200);
    expect(b.requests.length - before).toBe(1);
    expect(await logRow(requestId)).toMatchObject({ provider: "b", fallback_path: ["a"], status: 200 });
    await expectHold(requestId, "posted");
  });

  it("a stream that ends before its first event on a → b streams the answer", async () => {
    a.respond = { status: 200, headers: { "content-type": "text/event-stream" }, body: "" };
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const { data: stream, response } = await client.chat.completions.create({ model: "m-fb", messages, stream: true }).withResponse();
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text).toBe(await expectedContent());
    expect(await logRow(response.headers.get("x-request-id")!)).toMatchObject({ provider: "b", fallback_path: ["a"] });
  });
});

describe("an upstream that reports no usage", () => {
  it("still gives a client that asked for include_usage its usage chunk, with the billed local count", async () => {
    a.inject = { "x-mock-omit-usage": "1" };
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const { data: stream, response } = await client.chat.completions
      .create({ model: "m-fb", messages, stream: true, stream_options: { include_usage: true } })
      .withResponse();
    const chunks: ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const last = chunks.at(-1)!;
    expect(validateOpenAI("CreateChatCompletionStreamResponse", last)).toEqual([]);
    expect(last.choices).toEqual([]);
    expect(last.usage!.completion_tokens).toBeGreaterThan(0);
    await settled();
    const { rows } = await gw.db.pool.query("select usage_source, input_tokens, output_tokens from request_logs where request_id = $1", [
      response.headers.get("x-request-id"),
    ]);
    expect(rows).toEqual([
      { usage_source: "estimated", input_tokens: last.usage!.prompt_tokens, output_tokens: last.usage!.completion_tokens },
    ]);
  });
});

describe("no fallback on a final upstream status", () => {
  it.each([
    [400, 400],
    [401, 502],
    [403, 502],
    [404, 502],
    [413, 413],
    [422, 400],
  ])("a answers %i → the client gets %i and b is never called", async (upstream, client) => {
    a.inject = { "x-mock-status": String(upstream) };
    const before = b.requests.length;
    const { res, text, requestId } = await chat("m-fb");
    expect(res.status).toBe(client);
    expectErrorEnvelope(text, requestId);
    expect(b.requests.length).toBe(before);
    expect(await logRow(requestId)).toMatchObject({ provider: null, fallback_path: ["a"], status: client });
    await expectHold(requestId, "voided");
  });

  it("a stream answered 400 by a is refused with a JSON error, b never called", async () => {
    a.inject = { "x-mock-status": "400" };
    const before = b.requests.length;
    const { res, text, requestId } = await chat("m-fb", { stream: true });
    expect(res.status).toBe(400);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    expectErrorEnvelope(text, requestId);
    expect(b.requests.length).toBe(before);
    await expectHold(requestId, "voided");
  });
});

describe("every target fails", () => {
  it.each([
    [429, "rate_limit_error"],
    [529, "overloaded_error"],
  ])("%i from a and b → the same status (%s) with Retry-After and retry-after-ms passed through", async (status, type) => {
    const fault = { "x-mock-status": String(status), "x-mock-retry-after": "7", "x-mock-retry-after-ms": "6500" };
    a.inject = fault;
    b.inject = fault;
    const { res, text, requestId } = await chat("m-fb");
    expect(res.status).toBe(status);
    expect(res.headers.get("retry-after")).toBe("7");
    expect(res.headers.get("retry-after-ms")).toBe("6500");
    expect(expectErrorEnvelope(text, requestId)).toMatchObject({ type });
    expect(await logRow(requestId)).toMatchObject({ provider: null, fallback_path: ["a", "b"], status });
    await expectHold(requestId, "voided");
  });

  it("503 from both targets of a stream → 502 JSON error, hold released", async () => {
    a.inject = { "x-mock-status": "503" };
    b.inject = { "x-mock-status": "503" };
    const { res, text, requestId } = await chat("m-fb", { stream: true });
    expect(res.status).toBe(502);
    expectErrorEnvelope(text, requestId);
    expect(await logRow(requestId)).toMatchObject({ provider: null, fallback_path: ["a", "b"], status: 502 });
    await expectHold(requestId, "voided");
  });

  it("upstream text in Retry-After or other headers is not passed on", async () => {
    const answer = {
      status: 429,
      headers: { "retry-after": SECRET, "retry-after-ms": `${SECRET}-1`, "x-upstream-trace": SECRET, "set-cookie": `s=${SECRET}` },
      body: JSON.stringify({
        error: { message: `quota of sk-provider-a hit (${SECRET})`, type: "requests", param: null, code: "rate_limit_exceeded" },
      }),
    };
    a.respond = answer;
    b.respond = answer;
    const { res, text, requestId } = await chat("m-fb");
    expect(res.status).toBe(429);
    expectErrorEnvelope(text, requestId);
    expect(res.headers.get("retry-after")).toBeNull();
    expect(res.headers.get("retry-after-ms")).toBeNull();
    await expectHold(requestId, "voided");

    // Well-formed values still pass: an HTTP date and a fractional millisecond delay.
    const date = "Wed, 21 Oct 2037 07:28:00 GMT";
    a.respond = b.respond = { ...answer, headers: { "retry-after": date, "retry-after-ms": "1500.5" } };
    const dated = await chat("m-fb");
    expect(dated.res.status).toBe(429);
    expect(dated.res.headers.get("retry-after")).toBe(date);
    expect(dated.res.headers.get("retry-after-ms")).toBe("1500.5");
  });

  it("a stream that breaks after delivery began ends with an in-band error and bills what was delivered", async () => {
    a.inject = { "x-mock-drop-after": "2" };
    const client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
    const { data: stream, response } = await client.chat.completions.create({ model: "m-fb", messages, stream: true }).withResponse();
    const chunks: ChatCompletionChunk[] = [];
    const err = await (async () => {
      for await (const chunk of stream) chunks.push(chunk);
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(OpenAI.APIError);
    expect((err as InstanceType<typeof OpenAI.APIError>).code).toBe("upstream_stream_interrupted");
    expect(chunks).toHaveLength(3);
    const requestId = response.headers.get("x-request-id")!;
    expect(await logRow(requestId)).toMatchObject({ provider: "a", fallback_path: [], error_class: "upstream_error" });
    await expectHold(requestId, "posted");
  });
});

describe("no upstream secret leaks", () => {
  it("appears in no gateway response, log line or request log row", async () => {
    expect(seen.length).toBeGreaterThan(10);
    for (const response of seen) expect(response).not.toContain(SECRET);
    for (const response of seen) expect(response).not.toContain("sk-provider");
    expect(logLines.length).toBeGreaterThan(10);
    for (const line of logLines) {
      expect(line).not.toContain(SECRET);
      expect(line).not.toContain("sk-provider");
    }
    await settled();
    const { rows } = await gw.db.pool.query<{ row: string }>("select row_to_json(r)::text as row from request_logs r");
    expect(rows.length).toBeGreaterThan(10);
    for (const { row } of rows) expect(row).not.toContain(SECRET);
  });
});
