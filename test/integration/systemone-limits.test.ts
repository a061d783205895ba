import http from "node:http";
import { countTokens } from "gpt-tokenizer";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { evaluate, evaluator, judge } from "../helpers/systemone.js";

// The evaluation service's limits over real HTTP: the 64 MiB body cap, the process-wide body budget, the
// version 1.13 token limits at their boundaries, and the plan's context limit.

const CAP = 4096;
const BUDGET = 10_000;
let mock: MockUpstream;
let proxy: FaultProxy;
let db: TestDatabase;
/** Default limits: the 64 MiB cap. */
let gw: TestGateway;
/** A small cap and budget, to test their boundaries with small bodies. */
let small: TestGateway;
let key: string;

beforeAll(async () => {
  mock = await startMockUpstream();
  proxy = await startFaultProxy(mock.url);
  db = await createTestDatabase();
  const config = (systemone: Record<string, number>) => ({
    systemone,
    providers: { main: evaluator(proxy) },
    models: { judge: judge(["main"]), "judge-latest": judge(["main"], { upstream: "latest" }) },
    plans: { basic: { daily_tokens: 10_000_000, context_limit: 100_000 }, short: { daily_tokens: 10_000_000, context_limit: 1000 } },
    default_plan: "basic",
  });
  gw = await startTestGateway({ db, config: config({}) });
  small = await startTestGateway({ db, config: config({ max_body_bytes: CAP, admission_budget_bytes: BUDGET }) });
  await gw.services.auth.users.create({ email: "limits@example.test", password: "password-123" });
  ({ key } = await gw.services.auth.apiKeys.create({ user: "limits@example.test" }));
});

afterAll(async () => {
  await small?.close();
  await gw?.close();
  await db?.drop();
  await proxy?.close();
  await mock?.close();
});

const exact = (text: string) => countTokens(text, { disallowedSpecial: new Set() });
/** n tokens: " dog" is one token and never merges with its neighbours. */
const filler = (n: number) => " dog".repeat(n);

/** An evaluation body of exactly `bytes` bytes (its state padded). */
function bodyOf(bytes: number): string {
  const empty = JSON.stringify({ model: "judge", state: "", questions: { q: { type: "noul" } } });
  return JSON.stringify({ model: "judge", state: "x".repeat(bytes - empty.length), questions: { q: { type: "noul" } } });
}

interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * A raw request whose body is sent in `parts`, each after the previous `gate` resolves; with `length` it
 * declares a Content-Length, else it is chunked.
 */
function rawPost(gateway: TestGateway, parts: string[], opts: { length?: number; gate?: () => Promise<void> } = {}): Promise<RawAnswer> {
  const { port } = new URL(gateway.url);
  return new Promise((resolve, reject) => {
    const headers: http.OutgoingHttpHeaders = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    if (opts.length !== undefined) headers["content-length"] = opts.length;
    const req = http.request({ host: "127.0.0.1", port, method: "POST", path: "/v1/systemone", headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on("error", reject);
    void (async () => {
      for (const [i, part] of parts.entries()) {
        if (i > 0) await opts.gate?.();
        if (!req.destroyed) req.write(part);
      }
      if (!req.destroyed) req.end();
    })();
  });
}

describe("body cap", () => {
  it("refuses a body declared over 64 MiB with 413 before reading it", async () => {
    const res = await rawPost(gw, [], { length: 64 * 1024 * 1024 + 1 });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body).error).toMatchObject({ code: "request_too_large" });
    expect(res.headers.connection).toBe("close");
  });

  it("takes a body of exactly the cap and refuses one byte more, declared or chunked", async () => {
    expect((await evaluate(small.url, key, bodyOf(CAP))).status).toBe(200);
    expect((await evaluate(small.url, key, bodyOf(CAP + 1))).status).toBe(413);
    const chunked = bodyOf(CAP + 1);
    const res = await rawPost(small, [chunked.slice(0, 2000), chunked.slice(2000)]);
    expect(res.status).toBe(413);
  });
});

describe("body budget", () => {
  const inUse = () => small.services.bodyBudget.inUse();
  const until = async (bytes: number) => {
    while (inUse() !== bytes) await new Promise((resolve) => setTimeout(resolve, 5));
  };
  /** A request that declares its 4000 bytes, sends 100 and holds the rest until released. */
  function halfSent() {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const body = bodyOf(4000);
    const answer = rawPost(small, [body.slice(0, 100), body.slice(100)], { length: 4000, gate: () => gate });
    return { answer, release };
  }

  it("refuses what the process-wide budget cannot hold with 503, until the bodies holding it are done", async () => {
    const a = halfSent();
    await until(4000);
    const b = halfSent();
    await until(8000);
    // 8000 of 10,000 held: 3000 more do not fit, declared (refused before reading) or chunked (while reading).
    const declared = await rawPost(small, [bodyOf(3000)], { length: 3000 });
    expect(declared.status).toBe(503);
    expect(declared.headers["retry-after"]).toBe("1");
    expect(JSON.parse(declared.body).error).toMatchObject({ code: "body_budget_exhausted", type: "api_error" });
    const text = bodyOf(3000);
    const chunked = await rawPost(small, [text.slice(0, 1000), text.slice(1000)]);
    expect(chunked.status).toBe(503);
    await until(8000);
    // 2000 still fit.
    expect((await rawPost(small, [bodyOf(2000)], { length: 2000 })).status).toBe(200);
    a.release();
    b.release();
    expect((await a.answer).status).toBe(200);
    expect((await b.answer).status).toBe(200);
    await until(0);
    expect((await rawPost(small, [bodyOf(3000)], { length: 3000 })).status).toBe(200);
    expect(inUse()).toBe(0);
  });
});

/** What a question costs: its ID plus its compact JSON. */
const questionTokens = (id: string, question: object) => exact(id) + exact(JSON.stringify(question));

describe("token limits of version 1.13", () => {
  const noul = (n: number) => ({ type: "noul", instructions: filler(n) });
  const overhead = questionTokens("q", noul(1)) - 1;

  it("take exactly 32,000 tokens for the state plus the longest question, and refuse one more", async () => {
    const question = noul(1000);
    const state = 32_000 - questionTokens("q", question);
    const at = await evaluate(gw.url, key, { model: "judge", state: filler(state), questions: { q: question } });
    expect(at.status).toBe(200);
    const over = await evaluate(gw.url, key, { model: "judge", state: filler(state + 1), questions: { q: question } });
    expect(over.status).toBe(422);
    expect(over.json.error).toMatchObject({ code: "token_limit_exceeded", param: "questions.q" });
  });

  it("take exactly 64,000 tokens for the state and all questions, and refuse one more", async () => {
    // A state of 16,000 and four questions of up to 12,000: each pair under 32,000, together 64,000.
    const state = filler(16_000);
    const first = { a: noul(12_000), b: noul(12_000), c: noul(12_000) };
    const used = 16_000 + Object.entries(first).reduce((sum, [id, q]) => sum + questionTokens(id, q), 0);
    const last = 64_000 - used - overhead;
    const at = await evaluate(gw.url, key, { model: "judge", state, questions: { ...first, d: noul(last) } });
    expect(at.status).toBe(200);
    expect((at.json.usage as { input_tokens: number }).input_tokens).toBeGreaterThan(0);
    const over = await evaluate(gw.url, key, { model: "judge", state, questions: { ...first, d: noul(last + 1) } });
    expect(over.status).toBe(422);
    expect(over.json.error).toMatchObject({ code: "token_limit_exceeded", param: "questions" });
  });

  it("do not apply to a version the gateway has no limits for", async () => {
    const res = await evaluate(gw.url, key, { model: "judge-latest", state: filler(33_000), questions: { q: noul(10) } });
    expect(res.status).toBe(200);
  });
});

describe("the plan's context limit", () => {
  it("is 400 context_length_exceeded over the plan's limit, exactly at it passes", async () => {
    await gw.services.auth.users.create({ email: "short@example.test", password: "password-123", plan: "short" });
    const { key: shortKey } = await gw.services.auth.apiKeys.create({ user: "short@example.test" });
    const question = { type: "noul" };
    const state = 1000 - questionTokens("q", question);
    expect((await evaluate(gw.url, shortKey, { model: "judge", state: filler(state), questions: { q: question } })).status).toBe(200);
    const over = await evaluate(gw.url, shortKey, { model: "judge", state: filler(state + 1), questions: { q: question } });
    expect(over.status).toBe(400);
    expect(over.json.error).toMatchObject({ code: "context_length_exceeded", type: "invalid_request_error", param: null });
  });
});
