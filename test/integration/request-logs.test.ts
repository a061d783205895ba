import { randomBytes, randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { RequestLogRow } from "../../src/analytics/types.js";
import { createRequestLogWriter, type RequestLogWriterOptions } from "../../src/analytics/writer.js";
import { userRequestsRoute } from "../../src/analytics/user-requests-routes.js";
import { mountRoutes } from "../../src/server/route.js";
import { requestRead } from "../../src/db/faults.js";
import { freePort } from "../../src/db/free-port.js";
import { createPool } from "../../src/db/pool.js";
import type { AppEnv } from "../../src/server/context.js";
import { handleError } from "../../src/server/error-envelope.js";
import { testTransport } from "../helpers/gateway-app.js";
import { listen, type HttpServer } from "../../src/server/listen.js";
import { createLogger } from "../../src/logger.js";
import { requestContext } from "../../src/server/request-context.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

const newRequestId = () => `req_${randomBytes(16).toString("hex")}`;

function logRow(overrides: Partial<RequestLogRow> = {}): RequestLogRow {
  return {
    requestId: newRequestId(),
    userId: randomUUID(),
    keyId: randomUUID(),
    route: "/v1/chat/completions",
    clientProtocol: "openai",
    publicModel: "m1",
    upstreamModel: "m1-2024-07-18",
    provider: "backup",
    fallbackPath: ["main", "backup"],
    status: 200,
    errorClass: null,
    errorCode: null,
    inputTokens: 12,
    outputTokens: 34,
    cachedTokens: 0,
    quotaCharged: 46n,
    costUsd: null,
    upstreamCostUsd: null,
    usageSource: "upstream",
    gptImageUsageFallback: null,
    latencyMs: 12.345,
    ttfbMs: 3.5,
    streamed: true,
    receivedAt: new Date(Date.now() - 12),
    createdAt: new Date(),
    ...overrides,
  };
}

/** A logger whose lines the test can read, to check what the writer reports (and that it leaks no rows). */
function capturingLogger() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: createLogger("warn", sink), lines };
}

const writerOptions = (overrides: Partial<RequestLogWriterOptions> = {}): RequestLogWriterOptions => ({
  pool: db.pool,
  logger: createLogger("silent"),
  batchSize: 500,
  // Long enough that only the test (or a full batch) starts a flush.
  flushIntervalMs: 60_000,
  maxBuffered: 10_000,
  ...overrides,
});

async function storedIds(userId: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ request_id: string }>(
    "select request_id from request_logs where user_id = $1 order by request_id",
    [userId],
  );
  return rows.map((r) => r.request_id);
}

describe("request log writer", () => {
  it("writes 1,234 rows in at most three batches (one connection each), with every field stored", async () => {
    const userId = randomUUID();
    const connect = vi.spyOn(db.pool, "connect");
    const writer = createRequestLogWriter(writerOptions());
    const rows = Array.from({ length: 1234 }, () => logRow({ userId }));
    for (const row of rows) expect(writer.write(row)).toBeUndefined();
    await writer.flush();
    const batches = connect.mock.calls.length;
    connect.mockRestore();
    expect(batches).toBeGreaterThan(0);
    expect(batches).toBeLessThanOrEqual(3);
    expect(await storedIds(userId)).toEqual(rows.map((r) => r.requestId).sort());
    expect(writer.stats()).toEqual({ written: 1234, dropped: 0, failedFlushes: 0, buffered: 0 });

    const sample = rows[0]!;
    const { rows: stored } = await db.pool.query("select * from request_logs where request_id = $1", [sample.requestId]);
    expect(stored[0]).toEqual({
      request_id: sample.requestId,
      user_id: userId,
      key_id: sample.keyId,
      route: "/v1/chat/completions",
      client_protocol: "openai",
      public_model: "m1",
      upstream_model: "m1-2024-07-18",
      provider: "backup",
      fallback_path: ["main", "backup"],
      status: 200,
      error_class: null,
      error_code: null,
      input_tokens: 12,
      output_tokens: 34,
      cached_tokens: 0,
      quota_charged: "46",
      usage_source: "upstream",
      gpt_image_usage_fallback: null,
      latency_ms: "12.345",
      ttfb_ms: "3.500",
      streamed: true,
      received_at: sample.receivedAt,
      created_at: sample.createdAt,
      cost_usd: null,
      upstream_cost_usd: null,
    });
    await writer.close();
  });

  it("keeps a failed batch, retries it on the next flush and never duplicates a row", async () => {
    const userId = randomUUID();
    const { logger, lines } = capturingLogger();
    const writer = createRequestLogWriter(writerOptions({ logger }));
    const rows = Array.from({ length: 10 }, (_, i) => logRow({ userId, fallbackPath: i % 2 ? [] : ["a"] }));
    await db.pool.query("alter table request_logs rename to request_logs_paused");
    try {
      for (const row of rows) writer.write(row);
      await writer.flush();
      expect(writer.stats()).toMatchObject({ written: 0, failedFlushes: 1, buffered: 10, dropped: 0 });
    } finally {
      await db.pool.query("alter table request_logs_paused rename to request_logs");
    }
    await writer.flush();
    expect(writer.stats()).toMatchObject({ written: 10, failedFlushes: 1, buffered: 0 });
    // A batch whose COPY committed but whose reply was lost is sent again: its COPY fails whole on the first row
    // already there, and the INSERT that follows skips them all.
    for (const row of rows) writer.write(row);
    await writer.close();
    expect(await storedIds(userId)).toEqual(rows.map((r) => r.requestId).sort());
    const { rows: paths } = await db.pool.query<{ n: number }>(
      "select count(*)::int as n from request_logs where user_id = $1 and fallback_path = '{}'",
      [userId],
    );
    expect(paths[0]!.n).toBe(5);
    const logged = lines.join("");
    expect(logged).toContain("request log flush failed");
    for (const row of rows) expect(logged).not.toContain(row.requestId);
  });

  it("drops the oldest rows when a failing database lets the buffer overflow, and counts them", async () => {
    const userId = randomUUID();
    const writer = createRequestLogWriter(writerOptions({ batchSize: 4, maxBuffered: 6 }));
    const rows = Array.from({ length: 11 }, () => logRow({ userId }));
    await db.pool.query("alter table request_logs rename to request_logs_paused");
    try {
      // The 4th write starts a flush; 6 more fill the buffer behind it and the 11th is refused.
      for (const row of rows) writer.write(row);
      expect(writer.stats()).toMatchObject({ dropped: 1, buffered: 10 });
      await writer.flush();
      // The failed batch of 4 came back to a full buffer: the 4 oldest rows went.
      expect(writer.stats()).toMatchObject({ dropped: 5, buffered: 6, written: 0 });
      expect(writer.stats().failedFlushes).toBeGreaterThanOrEqual(1);
    } finally {
      await db.pool.query("alter table request_logs_paused rename to request_logs");
    }
    await writer.close();
    expect(await storedIds(userId)).toEqual(
      rows
        .slice(4, 10)
        .map((r) => r.requestId)
        .sort(),
    );
    expect(writer.stats()).toMatchObject({ written: 6, dropped: 5, buffered: 0 });
  });

  it("never blocks or throws while the database is unreachable; close() retries, then drops and counts", async () => {
    const deadPool = createPool(`postgres://postgres@127.0.0.1:${await freePort()}/none`, 2, () => {});
    const { logger, lines } = capturingLogger();
    const writer = createRequestLogWriter(writerOptions({ pool: deadPool, logger, batchSize: 3, maxBuffered: 5 }));
    const rows = Array.from({ length: 8 }, () => logRow());
    for (const row of rows) expect(writer.write(row)).toBeUndefined();
    // Nothing is awaited by write(): the rows are counted the moment it returns.
    expect(writer.stats().buffered + writer.stats().dropped).toBe(8);
    await writer.flush();
    expect(writer.stats().failedFlushes).toBeGreaterThanOrEqual(1);
    expect(writer.stats()).toMatchObject({ written: 0, buffered: 5, dropped: 3 });
    const failedBefore = writer.stats().failedFlushes;
    await writer.close();
    // One flush, then three retries with backoff.
    expect(writer.stats()).toEqual({ written: 0, dropped: 8, failedFlushes: failedBefore + 4, buffered: 0 });
    writer.write(logRow());
    expect(writer.stats().dropped).toBe(9);
    const logged = lines.join("");
    expect(logged).toContain("request log rows dropped");
    expect(logged).toContain("ECONNREFUSED");
    for (const row of rows) expect(logged).not.toContain(row.requestId);
    await deadPool.end();
  });

  it("close() flushes what is buffered; writes after it are dropped and counted", async () => {
    const userId = randomUUID();
    const writer = createRequestLogWriter(writerOptions());
    const rows = Array.from({ length: 7 }, () => logRow({ userId }));
    for (const row of rows) writer.write(row);
    await writer.close();
    expect(await storedIds(userId)).toHaveLength(7);
    writer.write(logRow({ userId }));
    await writer.flush();
    expect(writer.stats()).toEqual({ written: 7, dropped: 1, failedFlushes: 0, buffered: 0 });
    expect(await storedIds(userId)).toHaveLength(7);
  });

  it("drops a row that can never be stored instead of failing its batch forever", async () => {
    const userId = randomUUID();
    const writer = createRequestLogWriter(writerOptions());
    writer.write(logRow({ userId: "not-a-uuid" }));
    writer.write(logRow({ userId, quotaCharged: -1n }));
    writer.write(logRow({ userId, publicModel: "bad\0model", inputTokens: Number.NaN, latencyMs: 1e15 }));
    await writer.close();
    expect(writer.stats()).toEqual({ written: 1, dropped: 2, failedFlushes: 0, buffered: 0 });
    const { rows } = await db.pool.query("select public_model, input_tokens, latency_ms from request_logs where user_id = $1", [userId]);
    expect(rows).toEqual([{ public_model: "badmodel", input_tokens: 0, latency_ms: "999999999.999" }]);
  });

  it("stores any text a client can put in a model name, in the batch with ordinary rows", async () => {
    const userId = randomUUID();
    const writer = createRequestLogWriter(writerOptions());
    const names = ["lone \udc00 low", "lone \ud800 high", 'nul\0and\u0001 control "quoted" \\ back', "emoji 😀 é", '[{"a":1}]'];
    for (const publicModel of names) writer.write(logRow({ userId, publicModel, fallbackPath: [publicModel, ""] }));
    writer.write(logRow({ userId, publicModel: "plain" }));
    await writer.close();
    expect(writer.stats()).toEqual({ written: 6, dropped: 0, failedFlushes: 0, buffered: 0 });
    const { rows } = await db.pool.query<{ public_model: string; fallback_path: string[] }>(
      "select public_model, fallback_path from request_logs where user_id = $1",
      [userId],
    );
    const stored = (name: string) => name.replaceAll("\0", "").toWellFormed();
    expect(rows.map((r) => r.public_model).sort()).toEqual([...names.map(stored), "plain"].sort());
    for (const row of rows) if (row.public_model !== "plain") expect(row.fallback_path).toEqual([row.public_model, ""]);
  });
});

describe("GET /api/v1/user/requests", () => {
  let http: HttpServer;
  const alice = randomUUID();
  const bob = randomUUID();
  const carol = randomUUID();
  const aliceRows: RequestLogRow[] = [];

  beforeAll(async () => {
    const app = new Hono<AppEnv>();
    app.use("*", requestContext(createLogger("silent")));
    app.onError(handleError);
    // Stands in for sessionAuth, which createApp mounts in front of /api/v1/user.
    app.use("*", async (c, next) => {
      const userId = c.req.header("x-test-user")!;
      c.set("session", {
        sessionId: randomUUID(),
        userId,
        email: "u@example.test",
        role: "user",
        plan: "free",
        planRevision: 0,
        expiresAt: new Date(),
      });
      await next();
    });
    mountRoutes(app, [userRequestsRoute], {
      logPool: db.pool,
      read: requestRead(2_000),
      config: { retention: { request_log_days: 0 } } as never,
    });
    http = await listen(app, "127.0.0.1", 0, testTransport());

    // Two pairs share a created_at: only the request id orders them.
    const base = Date.parse("2030-01-01T00:00:00.000Z");
    for (const offset of [0, 1, 1, 2, 2])
      aliceRows.push(logRow({ userId: alice, createdAt: new Date(base + offset), quotaCharged: 1000n + BigInt(offset) }));
    const writer = createRequestLogWriter(writerOptions());
    for (const row of aliceRows) writer.write(row);
    for (let i = 0; i < 3; i++) writer.write(logRow({ userId: bob, createdAt: new Date(base + 1) }));
    await writer.close();
    // Timestamps a JS Date cannot tell apart (the same millisecond): the cursor must keep the microseconds.
    for (const [id, at] of [
      ["req_c1", "2030-01-01T00:00:00.123456Z"],
      ["req_c2", "2030-01-01T00:00:00.123999Z"],
      ["req_c3", "2030-01-01T00:00:00.123001Z"],
    ]) {
      await db.pool.query(
        `insert into request_logs (request_id, user_id, route, client_protocol, public_model, fallback_path, status,
           input_tokens, output_tokens, cached_tokens, quota_charged, usage_source, latency_ms, streamed, created_at)
         values ($1, $2, '/v1/embeddings', 'openai', 'e1', '{}', 200, 1, 0, 0, 1, 'upstream', 1, false, $3)`,
        [id, carol, at],
      );
    }
  });
  afterAll(() => http?.close(0));

  const get = (user: string, query = "") => fetch(`${http.url}/api/v1/user/requests${query}`, { headers: { "x-test-user": user } });

  async function allPages(user: string, limit: number) {
    const pages: { requests: Record<string, unknown>[]; next_cursor: string | null }[] = [];
    let cursor: string | null = null;
    do {
      const res = await get(user, `?limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`);
      expect(res.status).toBe(200);
      const page = (await res.json()) as (typeof pages)[number];
      pages.push(page);
      cursor = page.next_cursor;
    } while (cursor && pages.length < 10);
    return pages;
  }

  it("pages through the user's own rows newest first, ties broken by request id", async () => {
    const pages = await allPages(alice, 2);
    expect(pages.map((p) => p.requests.length)).toEqual([2, 2, 1]);
    expect(pages.at(-1)!.next_cursor).toBeNull();
    const expected = [...aliceRows]
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || (a.requestId < b.requestId ? 1 : -1))
      .map((r) => r.requestId);
    expect(pages.flatMap((p) => p.requests.map((r) => r.request_id))).toEqual(expected);
  });

  it("shows the bill and the support-case id, never routing metadata", async () => {
    const res = await get(alice, "?limit=1");
    const text = await res.text();
    const { requests } = JSON.parse(text) as { requests: Record<string, unknown>[] };
    const newest = aliceRows.filter((r) => r.createdAt.getTime() === Date.parse("2030-01-01T00:00:00.002Z"));
    expect(newest.map((r) => r.requestId)).toContain(requests[0]!.request_id);
    expect(requests[0]).toEqual({
      request_id: requests[0]!.request_id,
      created_at: "2030-01-01T00:00:00.002Z",
      route: "/v1/chat/completions",
      model: "m1",
      status: 200,
      error_class: null,
      error_code: null,
      streamed: true,
      input_tokens: 12,
      output_tokens: 34,
      cached_tokens: 0,
      quota_charged: 1002,
      cost_usd: null,
      usage_source: "upstream",
      gpt_image_usage_fallback: null,
      latency_ms: 12.345,
      ttfb_ms: 3.5,
    });
    for (const secret of ["m1-2024-07-18", "backup", "fallback_path", "provider", "upstream_model", "key_id"])
      expect(text).not.toContain(secret);
  });

  it("never shows another user's rows; defaults to 20 per page", async () => {
    const res = await get(bob);
    const body = (await res.json()) as { requests: { request_id: string }[]; next_cursor: string | null };
    expect(body.requests).toHaveLength(3);
    expect(body.next_cursor).toBeNull();
    expect(body.requests.map((r) => r.request_id)).not.toContain(aliceRows[0]!.requestId);
    const nobody = await (await get(randomUUID())).json();
    expect(nobody).toEqual({ requests: [], next_cursor: null });
  });

  it("keeps microsecond order across pages", async () => {
    const pages = await allPages(carol, 1);
    expect(pages.flatMap((p) => p.requests.map((r) => r.request_id))).toEqual(["req_c2", "req_c1", "req_c3"]);
  });

  it.each(["0", "101", "abc", "", "1.5", "-1"])("refuses limit=%j with 400 naming the parameter", async (limit) => {
    const res = await get(alice, `?limit=${limit}`);
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: Record<string, unknown> };
    expect(error).toMatchObject({ type: "invalid_request_error", param: "limit", request_id: res.headers.get("x-request-id") });
  });

  const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  it.each([
    ["not base64 json", "%%%"],
    ["garbage", "abc"],
    ["wrong shape", b64({ a: 1 })],
    ["bad time", b64({ t: "yesterday", id: "req_x" })],
    ["impossible date", b64({ t: "2030-02-30T00:00:00.000000Z", id: "req_x" })],
    ["null", b64(null)],
  ])("refuses a cursor (%s) with 400 naming the parameter", async (_name, cursor) => {
    const res = await get(alice, `?cursor=${encodeURIComponent(cursor)}`);
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: Record<string, unknown> };
    expect(error).toMatchObject({ type: "invalid_request_error", param: "cursor" });
  });
});
