import http from "node:http";
import { Writable } from "node:stream";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { apiOperations } from "../../src/runtime/routes.js";
import type { Access, OperationDescription } from "../../src/openapi/operation.js";
import { createLogger } from "../../src/logger.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";

// Issue 20, "Done means": generated hostile bodies and headers against every JSON route of the API description
// (deep nesting, NUL and lone surrogates, huge numbers, long strings, `__proto__` keys, wrong types), each with
// the credential its route takes, so the body reaches validation. Whatever comes: never a 5xx, never a log line
// over 8 KiB, never a stored field over its bound.

const RUNS = 2000;
const MAX_LOG_LINE = 8 * 1024;
const BOT = "bot-token-for-the-fuzz-test-0123456789abcdef";
const PASSWORD = "a-long-password-for-the-fuzz-test";
/** The longest text any column may hold: support content (20,000 characters, up to 4 bytes each) is the largest. */
const MAX_STORED_BYTES = 80_000;
/** What the request log may store of an identifier it was sent (docs/security.md, "Input validation and logs"). */
const MAX_REQUEST_LOG_TEXT = 1024;

let mock: MockUpstream;
let gw: TestGateway;
let agent: http.Agent;
const logLines: string[] = [];
let credentials: Record<Access, Record<string, string>>;
let caseId: string;

/** Every log line the gateway writes, kept to be measured. */
const logSink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    for (const line of chunk.toString("utf8").split("\n")) if (line) logLines.push(line);
    done();
  },
});

beforeAll(async () => {
  mock = await startMockUpstream();
  gw = await startTestGateway({
    logger: createLogger("info", logSink),
    env: { SUPPORT_BOT_TOKEN: BOT },
    config: {
      providers: {
        chat: { protocol: "openai", base_url: mock.baseUrl },
        claude: { protocol: "anthropic", base_url: mock.url },
        gemini: { protocol: "gemini", base_url: mock.url },
        judge: { protocol: "systemone", base_url: mock.url },
        vid: { protocol: "video", base_url: mock.baseUrl },
      },
      models: {
        m1: { kind: "chat", upstream: "mock-gpt-small", targets: ["chat"] },
        claude: { kind: "chat", upstream: "mock-claude", targets: ["claude"] },
        gem: { kind: "chat", upstream: "mock-gemini", targets: ["gemini"] },
        embed: { kind: "embedding", upstream: "mock-embed", targets: ["chat"] },
        img: { kind: "image", upstream: "gpt-image-1", targets: ["chat"] },
        video: { kind: "video", upstream: "mock-video", targets: ["vid"], video_price: { units_per_second: 1 } },
        judge: { kind: "systemone", upstream: "1.13.0", targets: ["judge"] },
      },
      plans: { free: { daily_tokens: 1_000_000_000_000, context_limit: 128_000 } },
      media: { download: { allow_private: ["127.0.0.1"] } },
    },
  });
  agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  const { users, apiKeys } = gw.services.auth;
  await users.create({ email: "fuzz-user@example.test", password: PASSWORD });
  await users.create({ email: "fuzz-admin@example.test", password: PASSWORD, role: "admin" });
  const { key } = await apiKeys.create({ user: "fuzz-user@example.test" });
  const user = await logIn(gw.url, "fuzz-user@example.test", PASSWORD);
  const admin = await logIn(gw.url, "fuzz-admin@example.test", PASSWORD);
  credentials = {
    public: {},
    apiKey: { authorization: `Bearer ${key}` },
    session: { authorization: `Bearer ${user.token}` },
    admin: admin.headers,
    bot: { authorization: `Bearer ${BOT}` },
    metrics: {},
  };
  // A case of the user's own, so that routes under /cases/{id} reach their bodies' validation too.
  const chat = await send("POST", "/v1/chat/completions", credentials.apiKey, JSON.stringify(seed("createChatCompletion")));
  expect(chat.status).toBe(200);
  // The request log is written in batches: the case can be opened once its request is there.
  const open = () =>
    send(
      "POST",
      "/api/v1/user/assistant/cases",
      credentials.session,
      JSON.stringify({ request_id: chat.requestId, locale: "en", question: "Why?" }),
    );
  let opened = await open();
  for (let tries = 0; opened.status === 404 && tries < 50; tries++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    opened = await open();
  }
  expect(opened.status).toBe(201);
  caseId = (JSON.parse(opened.text) as { case: { id: string } }).case.id;
}, 120_000);

afterAll(async () => {
  agent?.destroy();
  await gw?.close();
  await mock?.close();
});

interface Answer {
  status: number;
  text: string;
  requestId: string;
}

function send(method: string, path: string, headers: Record<string, string>, body: string | Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${gw.url}${path}`, { method, agent, headers: { "content-type": "application/json", ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          text: Buffer.concat(chunks).toString("utf8"),
          requestId: String(res.headers["x-request-id"]),
        }),
      );
      res.on("error", reject);
    });
    // A refused body may be answered (and the connection closed) before it is all written.
    req.on("error", (err: NodeJS.ErrnoException) =>
      err.code === "ECONNRESET" || err.code === "EPIPE" ? resolve({ status: 0, text: "", requestId: "" }) : reject(err),
    );
    req.end(body);
  });
}

/** A plausible body per operation: the fuzz mutates it, so that hostile values reach each field's validation. */
function seed(operationId: string): Record<string, unknown> {
  const messages = [{ role: "user", content: "Say hello" }];
  const seeds: Record<string, Record<string, unknown>> = {
    createChatCompletion: { model: "m1", messages, max_tokens: 16 },
    createEmbedding: { model: "embed", input: "hello" },
    createResponse: { model: "m1", input: "hello", max_output_tokens: 16 },
    createMessage: { model: "claude", max_tokens: 16, messages },
    createMessageV1: { model: "claude", max_tokens: 16, messages },
    generateContent: { contents: [{ role: "user", parts: [{ text: "hello" }] }] },
    streamGenerateContent: { contents: [{ role: "user", parts: [{ text: "hello" }] }] },
    evaluate: { model: "judge", state: "hello", questions: { q: { type: "noul" } } },
    evaluateNative: { model: "judge", state: "hello", questions: { q: { type: "noul" } } },
    createImage: { model: "img", prompt: "a fox" },
    createImageEdit: { model: "img", prompt: "a fox", images: [{ image_url: "data:image/png;base64,AAAA" }] },
    createEmbedToken: { model: "img", ttl_seconds: 60 },
    createVideoGeneration: { model: "video", prompt: "a fox", duration: 5 },
    login: { email: "fuzz-user@example.test", password: "wrong-password-of-the-fuzz" },
    adminCreateUser: { email: "new@example.test", password: PASSWORD, role: "user" },
    adminCreateKey: { user: "fuzz-user@example.test", name: "k", pricing_group: "default" },
    adminCreditResellerBalance: { usd: "1.5", note: "fuzz" },
    setQuotaResetSettings: { auto_reset_enabled: true },
    adminGrantQuotaResets: { count: 1, expires: "2099-12-31", note: "fuzz" },
    sendTokenTransfer: { recipient: "fuzz-user@example.test", amount: 1, idempotency_key: "fuzz" },
    previewTokenTransfer: { recipient: "fuzz-user@example.test", amount: 1 },
    setTokenTransferPreferences: { receive_disabled: false },
    adminSetTokenTransferPolicy: {
      revision: 0,
      enabled: true,
      min_amount: 1,
      send_daily_limit: 100,
      receive_daily_limit: 100,
      service_daily_limit: 1000,
    },
    createSupportCase: { request_id: "req_0", locale: "en", question: "Why?" },
    postSupportMessage: { content: "hello" },
    replyToSupportCase: { content: "hello" },
    operatorDraftForSupportCase: { content: "draft" },
    bugDraftForSupportCase: { content: "draft" },
    updateSupportIncident: { status: "confirmed", public_summary: "summary" },
    claimSupportJobs: { limit: 1, lease_seconds: 60, worker_id: "w" },
    completeSupportJob: {
      lease_token: "t",
      revision: 1,
      content: "answer",
      card: null,
      evidence: [],
      usage: { prompt_tokens: 1, completion_tokens: 1, cost_usd: null },
      disposition: "answer",
    },
    failSupportJob: { lease_token: "t", error_code: "e", retryable: true },
    chatPlatformControl: { source_ref: "chan-1" },
    chatPlatformSnapshot: { source_ref: "chan-1", messages: [{ id: "m1", role: "user", content: "hi" }] },
  };
  return structuredClone(seeds[operationId] ?? {});
}

const jsonOperations = apiOperations().filter((op) => op.body !== undefined && op.method !== "get");

/** Every byte percent-encoded: a lone surrogate has no UTF-8 form, so its bytes are the replacement character's. */
const percentEncoded = (text: string) => [...Buffer.from(text, "utf8")].map((b) => `%${b.toString(16).padStart(2, "0")}`).join("");

/** A path segment as a client may send it: valid UTF-8 or not, NUL, traversal, broken escapes. */
const hostileSegment = fc.oneof(
  fc
    .oneof(
      fc.string({ unit: "binary", maxLength: 300 }),
      fc.constantFrom(257, 5000).map((n) => "x".repeat(n)),
    )
    .map(percentEncoded),
  fc.constantFrom("%00", "%ED%A0%80", "%C0%AF", "%E0%80%AF", "%", "%zz", "..%2F..%2Fadmin", "a%2Fb", "%FF%FE"),
);

/** A path for the operation: its parameters filled with real or hostile (already encoded) values. */
function pathOf(op: OperationDescription, hostileParam: string | null): string {
  const value = (name: string) => {
    if (hostileParam !== null) return hostileParam;
    if (name === "model") return op.path.includes("Content") ? "gem" : "m1";
    if (name === "id" && op.path.includes("/cases/")) return caseId;
    if (name === "user") return "fuzz-user@example.test";
    return "00000000-0000-4000-8000-000000000000";
  };
  return op.path.replace(/\{(\w+)\}/g, (_, name: string) => value(name));
}

// Hostile values, the fuzz's vocabulary.
const longString = fc.constantFrom(255, 256, 257, 1024, 8193, 70_000, 1_100_000).map((n) => "x".repeat(n));
const badText = fc
  .tuple(
    fc.string({ maxLength: 40 }),
    fc.constantFrom("\u0000", "\ud800", "\udfff", "\ud83d", "\u0000\u0000", "\ufffe", "\u202e"),
    fc.constantFrom(0, 300, 9000, 300_000),
  )
  .map(([text, bad, padding]) => `${text}${bad}${"y".repeat(padding)}`);
const anyText = fc.string({ unit: "binary", maxLength: 300 });
const hugeNumber = fc.constantFrom(1e308, -1e308, 2 ** 64, -(2 ** 63), Number.MAX_SAFE_INTEGER + 2, 5e-324, -0, 0.5, -1, 1e21);
const deep = fc
  .tuple(fc.constantFrom(64, 129, 1000, 10_000, 50_000), fc.boolean())
  .map(([depth, arrays]) => ({ raw: arrays ? "[".repeat(depth) + "]".repeat(depth) : '{"a":'.repeat(depth) + "1" + "}".repeat(depth) }));
const protoKeys = fc
  .constantFrom("__proto__", "constructor", "hasOwnProperty", "toString", "prototype", "valueOf")
  .map((key) => ({ raw: `{${JSON.stringify(key)}:{"polluted":true,"length":1e300}}` }));
const wrongType = fc.constantFrom<unknown>(null, true, false, [], {}, [[[]]], "", 0, [null], { "": "" });
const leaf: fc.Arbitrary<unknown> = fc.oneof(longString, badText, anyText, hugeNumber, wrongType, deep, protoKeys);

/** A value as JSON text; `{raw}` stands for text JSON.stringify cannot make (deep nesting, `__proto__` keys). */
function toJson(value: unknown): string {
  if (value && typeof value === "object" && !Array.isArray(value) && "raw" in value) return (value as { raw: string }).raw;
  if (Array.isArray(value)) return `[${value.map(toJson).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${toJson(v)}`)
      .join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/** Every path into a body (objects' keys, arrays' indexes), the body itself as []. */
function pathsOf(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  const paths = [prefix];
  if (Array.isArray(value)) value.forEach((v, i) => paths.push(...pathsOf(v, [...prefix, i])));
  else if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) paths.push(...pathsOf(v, [...prefix, k]));
  return paths;
}

function setAt(body: Record<string, unknown>, path: (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value;
  let node = body as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  node[path.at(-1)!] = value;
  return body;
}

const mutation = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("field" as const), pick: fc.nat(), value: leaf }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("extra" as const),
      key: fc.oneof(anyText, fc.constantFrom("__proto__", "constructor")),
      value: leaf,
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("whole" as const), value: leaf }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("raw" as const),
      text: fc.constantFrom(
        '{"model": 1e99999}',
        '{"a":"\\ud800"}',
        "\u0000",
        '{"a":1',
        "9".repeat(400),
        '{"model":"\u0000"}',
        '"\\u0000"',
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("bytes" as const), bytes: fc.uint8Array({ minLength: 1, maxLength: 64 }) }) },
);

type Mutation = typeof mutation extends fc.Arbitrary<infer T> ? T : never;

function bodyOf(op: OperationDescription, m: Mutation): string | Buffer {
  const body = seed(op.operationId);
  switch (m.kind) {
    case "field": {
      const paths = pathsOf(body);
      return toJson(setAt(body, paths[m.pick % paths.length]!, m.value));
    }
    case "extra":
      return toJson({ ...body, [m.key]: m.value });
    case "whole":
      return toJson(m.value);
    case "raw":
      return m.text;
    case "bytes":
      return Buffer.from(m.bytes);
  }
}

// Headers a client may send hostile values in (values Node's client accepts: visible ASCII and spaces).
const headerValue = fc.oneof(
  fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength: 200 }),
  fc.constantFrom(200, 5000, 12_000).map((n) => "h".repeat(n)),
);
const headerName = fc.constantFrom(
  "x-upstream-api-key",
  "x-request-id",
  "idempotency-key",
  "anthropic-version",
  "anthropic-beta",
  "x-goog-api-key",
  "accept",
  "accept-encoding",
  "content-type",
  "x-forwarded-for",
  "x-csrf-token",
  "authorization",
  "x-stainless-retry-count",
);
const headers = fc.dictionary(headerName, headerValue, { maxKeys: 3 });

/** Bounded log lines since `from`, as the issue asks: the longest line's length and the offending lines' starts. */
function longLines(from: number): string[] {
  return logLines
    .slice(from)
    .filter((line) => Buffer.byteLength(line) > MAX_LOG_LINE)
    .map((line) => `${line.slice(0, 300)}…`);
}

describe("hostile bodies and headers on every JSON route", () => {
  it("describes the routes the fuzz sends to", () => {
    // Routes grow: a JSON route with no seed would only ever see its empty-body refusal.
    const unseeded = jsonOperations.filter((op) => Object.keys(seed(op.operationId)).length === 0).map((op) => op.operationId);
    expect(unseeded).toEqual([]);
    expect(jsonOperations.length).toBeGreaterThanOrEqual(25);
  });

  it(`answers ${RUNS} generated requests without a 5xx or an oversize log line`, async () => {
    const seen = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...jsonOperations.map((op) => op.operationId)),
        mutation,
        headers,
        fc.option(hostileSegment, { freq: 8 }),
        fc.boolean(),
        async (operationId, m, extraHeaders, hostileParam, stream) => {
          const op = jsonOperations.find((o) => o.operationId === operationId)!;
          let body = bodyOf(op, m);
          // Streamed answers go through other code than whole ones.
          if (stream && typeof body === "string" && body.startsWith("{") && op.tag === "Inference")
            body = `{"stream":true,${body.slice(1)}`;
          const from = logLines.length;
          const answer = await send(
            op.method.toUpperCase(),
            pathOf(op, hostileParam),
            { ...extraHeaders, ...credentials[op.access] },
            body,
          );
          seen.set(op.operationId, (seen.get(op.operationId) ?? 0) + 1);
          expect(answer.status, `${op.method} ${op.path}: ${answer.text.slice(0, 500)}`).toBeLessThan(500);
          expect(longLines(from), `${op.method} ${op.path}`).toEqual([]);
        },
      ),
      { numRuns: RUNS, endOnFailure: true },
    );
    // Every route was reached, many times over.
    for (const op of jsonOperations) expect(seen.get(op.operationId) ?? 0, op.operationId).toBeGreaterThan(10);
  }, 600_000);

  it("stored no text over its bound", async () => {
    const { rows: columns } = await gw.db.pool.query<{ table_name: string; column_name: string }>(
      `select table_name, column_name from information_schema.columns
        where table_schema = 'public' and data_type in ('text', 'character varying', 'jsonb', 'json')`,
    );
    expect(columns.length).toBeGreaterThan(20);
    const over: string[] = [];
    for (const { table_name, column_name } of columns) {
      const { rows } = await gw.db.pool.query<{ longest: number | null }>(
        `select max(octet_length(${quoteIdent(column_name)}::text)) as longest from ${quoteIdent(table_name)}`,
      );
      const longest = rows[0]?.longest ?? 0;
      const bound = table_name === "request_logs" ? MAX_REQUEST_LOG_TEXT : MAX_STORED_BYTES;
      if (longest > bound) over.push(`${table_name}.${column_name}: ${longest} bytes`);
    }
    expect(over).toEqual([]);
  });
});

const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;
