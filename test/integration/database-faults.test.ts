import { randomBytes, randomUUID } from "node:crypto";
import { Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { RequestLogRow } from "../../src/analytics/types.js";
import { createRequestLogWriter, type RequestLogWriterOptions } from "../../src/analytics/writer.js";
import type { ConfigInput } from "../../src/config/schema.js";
import { createPool, type Pool } from "../../src/db/pool.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { createLogger } from "../../src/logger.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";
import { countLogWrites, rowsOf, settled, type Row } from "../helpers/metering-checks.js";
import { startPgFaultProxy, type PgFaultProxy } from "../helpers/pg-fault-proxy.js";

// Through database faults (docs/architecture.md, "Database faults"): the real app on real HTTP, its pool going
// to PostgreSQL through a TCP proxy that cuts, refuses or stalls connections on demand (pg-fault-proxy.ts). The
// test's own reads take the direct road (db.pool). Every scenario has its own proxy, gateway and users.

/** A client's answer slower than this is a hang (fetch fails with a TimeoutError, naming the request). */
const HANG_MS = 10_000;
/** max_tokens of a request the free units of a warmed-up lease cover, and of one whose hold needs a grant. */
const SMALL = 16;
const BIG = 200_000;

let mock: MockUpstream;
let db: TestDatabase;
let users = 0;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  mock = await startMockUpstream();
  db = await createTestDatabase();
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await mock?.close();
  await db?.drop();
});

/** A logger whose JSON lines the test can read. */
function capturingLogger(level = "info") {
  const lines: Row[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split("\n")) if (line) lines.push(JSON.parse(line) as Row);
      done();
    },
  });
  return { logger: createLogger(level, sink), lines };
}

interface FaultyGateway {
  gw: TestGateway;
  proxy: PgFaultProxy;
  /** The gateway's pool (through the proxy). */
  pool: Pool;
  lines: Row[];
  /** API key lookups the gateway sent to the database so far (a cached key needs none). */
  lookups(): number;
}

/** Counts the key authenticator's lookups on `pool` (by the name of its prepared statement). */
function countLookups(pool: Pool): () => number {
  let lookups = 0;
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  pool.query = ((...args: unknown[]) => {
    if ((args[0] as { name?: string } | null)?.name === "auth_api_key_lookup") lookups++;
    return query(...args);
  }) as Pool["query"];
  return () => lookups;
}

/** A gateway whose every database connection goes through a fault proxy of its own; closed after the test. */
async function faultyGateway(
  database: NonNullable<ConfigInput["database"]> = {},
  quota: NonNullable<ConfigInput["quota"]> = {},
): Promise<FaultyGateway> {
  const proxy = await startPgFaultProxy(db.url);
  cleanups.push(() => proxy.close());
  const timeouts = { request_timeout_ms: 500, connect_timeout_ms: 500, ...database };
  // As `gateway serve` opens it (src/runtime/database.ts): every statement under the query timeout.
  const pool = createPool(proxy.url, 10, () => {}, {
    connectTimeoutMs: timeouts.connect_timeout_ms,
    queryTimeoutMs: timeouts.query_timeout_ms,
  });
  cleanups.push(() => pool.end());
  const lookups = countLookups(pool);
  const { logger, lines } = capturingLogger();
  const gw = await startTestGateway({
    db,
    pool,
    logger,
    config: {
      providers: { mock: { protocol: "openai", base_url: mock.baseUrl } },
      models: { chat: { kind: "chat", upstream: "mock-gpt-small", targets: ["mock"] } },
      plans: { basic: { daily_tokens: 10_000_000, context_limit: 100_000 } },
      default_plan: "basic",
      database: timeouts,
      // A lease keeps its free units between the requests of a scenario (by default it gives them back after 2 s idle).
      quota: { lease_idle_ms: 60_000, ...quota },
    },
  });
  // The database must be back for the shutdown to write what waits (else it retries for the grace).
  cleanups.push(async () => {
    proxy.resume();
    proxy.up();
    await gw.close();
  });
  countLogWrites(gw);
  return { gw, proxy, pool, lines, lookups };
}

/**
 * Statements of the test's database running or waiting for over a second, and the gateway's pool while callers
 * wait for a connection, sampled every 250 ms until stop(): what a failure of a scenario shows of the database's
 * side (a lock wait, an I/O wait, a backend left behind by a cut) and of the pool's (connections never released).
 */
function sampleSlowStatements(pool: Pool, gatewayPool: Pool) {
  const seen: Row[] = [];
  let sampling: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    const { totalCount, idleCount, waitingCount } = gatewayPool;
    if (waitingCount > 0) seen.push({ at: Math.round(performance.now()), pool: { totalCount, idleCount, waitingCount } });
    sampling = pool
      .query<Row>(
        `select pid, state, wait_event_type, wait_event, round(extract(epoch from now() - query_start) * 1000) as ms, left(query, 60) as query
         from pg_stat_activity
         where datname = current_database() and pid <> pg_backend_pid() and state <> 'idle' and now() - query_start > interval '1 second'`,
      )
      .then(({ rows }) => seen.push(...rows.map((r) => ({ at: Math.round(performance.now()), ...r }))))
      .catch(() => {});
  }, 250);
  return {
    async stop() {
      clearInterval(timer);
      await sampling;
      return seen.slice(-40);
    },
  };
}

async function freshUser(gw: TestGateway) {
  const email = `faults-${++users}@example.test`;
  const user = await gw.services.auth.users.create({ email, password: "password-123", plan: "basic" });
  const { key } = await gw.services.auth.apiKeys.create({ user: email });
  return { id: user.id, key };
}

function chat(gw: TestGateway, key: string, maxTokens = SMALL, content = "Say something short") {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat", messages: [{ role: "user", content }], max_tokens: maxTokens }),
    signal: AbortSignal.timeout(HANG_MS),
  });
}

const probe = (gw: TestGateway, path: "/readyz" | "/healthz") => fetch(`${gw.url}${path}`, { signal: AbortSignal.timeout(HANG_MS) });

async function expectDatabaseUnavailable(res: Response) {
  expect(res.status).toBe(503);
  expect(res.headers.get("retry-after")).toBe("2");
  expect(await res.json()).toEqual({
    error: {
      message: expect.any(String),
      type: "api_error",
      code: "database_unavailable",
      param: null,
      request_id: res.headers.get("x-request-id"),
    },
  });
}

/** The user's posted holds, read on the direct road. */
async function postedHolds(userId: string): Promise<number> {
  const rows = await rowsOf(
    db.pool,
    "select h.id from quota_holds h join quota_accounts a on a.id = h.account_id where a.user_id = $1 and h.status = 'posted'",
    [userId],
  );
  return rows.length;
}

/**
 * Small requests, each settled in the ledger, until one is served from the key cache; returns how many it took
 * (at least two). The lease has free units then, and keeps them. A lookup is not cached when a key's NOTIFY
 * (its own creation's, or another key's) arrives while it runs, so the first request alone proves nothing.
 */
async function warmUp({ gw, lookups }: FaultyGateway, user: { id: string; key: string }): Promise<number> {
  for (let requests = 1; requests <= 5; requests++) {
    const before = lookups();
    const res = await chat(gw, user.key);
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    await expect.poll(() => postedHolds(user.id), { interval: 25, timeout: 5000 }).toBe(requests);
    if (lookups() === before) return requests;
  }
  throw new Error("the key was never served from the cache");
}

describe("a database outage", () => {
  it("an API key not yet cached gets 503 database_unavailable with Retry-After, never 500; once the database is back it works", async () => {
    const { gw, proxy } = await faultyGateway();
    const user = await freshUser(gw);
    proxy.down();
    const answers = await Promise.all(Array.from({ length: 5 }, () => chat(gw, user.key)));
    for (const res of answers) await expectDatabaseUnavailable(res);
    proxy.up();
    const res = await chat(gw, user.key);
    expect(res.status).toBe(200);
    await settled([gw], user.id, 1);
  });

  it("an answer waits for its charge's commit: a database back within request_timeout_ms gets it 200 with its charge", async () => {
    const faulty = await faultyGateway({ request_timeout_ms: 3_000 });
    const { gw, proxy } = faulty;
    const user = await freshUser(gw);
    const before = await warmUp(faulty, user);
    proxy.down();
    let answered: Response | undefined;
    const asked = chat(gw, user.key, SMALL, "Answer during the outage").then((res) => (answered = res));
    // Admitted from the lease's free units and answered by the upstream; its charge cannot commit, so neither can
    // the answer go out.
    await expect.poll(() => proxy.stats().refused, { timeout: 5_000 }).toBeGreaterThan(0);
    await sleep(300);
    expect(answered).toBeUndefined();
    expect(await postedHolds(user.id)).toBe(before);
    proxy.up();
    const during = await asked;
    expect(during.status).toBe(200);
    const body = (await during.json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
    // Committed before it was answered: the row and the charge are there the moment it arrives.
    const s = await settled([gw], user.id, before + 1);
    const row = s.logs.find((l) => l.request_id === during.headers.get("x-request-id"));
    expect(row).toMatchObject({ status: 200, input_tokens: body.usage.prompt_tokens, output_tokens: body.usage.completion_tokens });
    expect(during.headers.get("x-gateway-charge")).toBe(row!.quota_charged);
    expect(s.holds.find((h) => h.request_id === row!.request_id)).toMatchObject({ status: "posted", charged: row!.quota_charged });
  });

  it("an answer whose charge cannot commit by request_timeout_ms is refused 503 and charged nothing; later requests wait for the database without calling the upstream", async () => {
    const faulty = await faultyGateway({ request_timeout_ms: 500 });
    const { gw, proxy } = faulty;
    const user = await freshUser(gw);
    const before = await warmUp(faulty, user);
    proxy.down();
    // The pool learns that its idle connections were cut when their sockets' errors are read: a sync sent on one
    // before that could have committed, and its answer would wait for the database (docs/billing.md, "Settlement").
    await sleep(100);
    const withdrawn = await chat(gw, user.key, SMALL, "Answer during the outage");
    await expectDatabaseUnavailable(withdrawn);
    // The lease's sync is failing: the next request is not admitted from its free units (no upstream call, whose
    // answer could not be charged); it waits for the database and gets the same 503.
    const waited = await chat(gw, user.key);
    await expectDatabaseUnavailable(waited);
    proxy.up();
    expect((await chat(gw, user.key)).status).toBe(200);
    // The withdrawn request is logged as the 503 it was, voided; the ledger agrees with the log.
    const s = await settled([gw], user.id, before + 2);
    const row = s.logs.find((l) => l.request_id === withdrawn.headers.get("x-request-id"));
    expect(row).toMatchObject({ status: 503, error_code: "database_unavailable", quota_charged: "0", provider: "mock" });
    expect(s.holds.find((h) => h.request_id === row!.request_id)).toMatchObject({ status: "voided" });
    // The one after it never reached an upstream, and held nothing.
    const refused = s.logs.find((l) => l.request_id === waited.headers.get("x-request-id"));
    expect(refused).toMatchObject({ status: 503, error_code: "database_unavailable", provider: null });
    expect(s.holds.map((h) => h.request_id)).not.toContain(refused!.request_id);
  });

  it("a reservation the lease cannot cover gets 503 database_unavailable after request_timeout_ms; nothing is charged and the refusal is logged", async () => {
    const faulty = await faultyGateway({ request_timeout_ms: 500 });
    const { gw, proxy } = faulty;
    const user = await freshUser(gw);
    const before = await warmUp(faulty, user);
    proxy.down();
    const refused = await chat(gw, user.key, BIG);
    await expectDatabaseUnavailable(refused);
    // An outage of over a second: the lease's sync now retries at pauses of a second or more; a request waiting
    // for it must not wait out the pause once the database is back.
    await sleep(1000);
    proxy.up();
    const after = await chat(gw, user.key, BIG);
    expect(after.status).toBe(200);
    // A hold per answered request (the refused one held nothing), and a log row more.
    const s = await settled([gw], user.id, before + 1);
    expect(s.logs).toHaveLength(before + 2);
    const row = s.logs.find((l) => l.request_id === refused.headers.get("x-request-id"));
    expect(row).toMatchObject({ status: 503, error_code: "database_unavailable", quota_charged: "0" });
    expect(s.holds.map((h) => h.request_id)).not.toContain(row!.request_id);
  });

  it("/readyz answers 503 while the database is down and 200 once it is back; /healthz answers 200 throughout", async () => {
    const { gw, proxy } = await faultyGateway();
    expect((await probe(gw, "/readyz")).status).toBe(200);
    proxy.down();
    const down = await probe(gw, "/readyz");
    expect(down.status).toBe(503);
    expect(await down.json()).toMatchObject({ status: "not_ready", checks: { database: false } });
    expect((await probe(gw, "/healthz")).status).toBe(200);
    proxy.up();
    const up = await probe(gw, "/readyz");
    expect(up.status).toBe(200);
    expect(await up.json()).toEqual({ status: "ready", checks: { database: true, migrations: true } });
    expect((await probe(gw, "/healthz")).status).toBe(200);
  });

  it("logs one DATABASE_UNREACHABLE warning and one DATABASE_BACK line, however many requests failed", async () => {
    const faulty = await faultyGateway();
    const { gw, proxy, lines } = faulty;
    const user = await freshUser(gw);
    const stranger = await freshUser(gw);
    const before = await warmUp(faulty, user);
    proxy.down();
    await sleep(100);
    // An answer whose charge cannot be committed (withdrawn); refused key lookups, a refused reservation, probes.
    await expectDatabaseUnavailable(await chat(gw, user.key));
    const failed = await Promise.all([...Array.from({ length: 10 }, () => chat(gw, stranger.key)), chat(gw, user.key, BIG)]);
    for (const res of failed) await expectDatabaseUnavailable(res);
    for (let i = 0; i < 3; i++) expect((await probe(gw, "/readyz")).status).toBe(503);
    // A fault is an outage, and logged, once nothing has succeeded for a second (src/db/health.ts).
    await vi.waitFor(() => expect(gw.services.health.stats().outages).toBe(1), { timeout: 5_000 });
    proxy.up();
    expect((await probe(gw, "/readyz")).status).toBe(200);
    await settled([gw], user.id, before + 1);
    await gw.services.requestLog.flush();
    const unreachable = lines.filter((l) => String(l.msg).startsWith("DATABASE_UNREACHABLE"));
    const back = lines.filter((l) => String(l.msg).startsWith("DATABASE_BACK"));
    expect(unreachable).toHaveLength(1);
    expect(unreachable[0]).toMatchObject({ level: 40, what: expect.any(String), code: expect.any(String) });
    expect(back).toHaveLength(1);
    expect(back[0]).toMatchObject({ level: 30, outage_ms: expect.any(Number) });
    expect(lines.indexOf(back[0]!)).toBeGreaterThan(lines.indexOf(unreachable[0]!));
    expect(gw.services.health.stats()).toMatchObject({ up: true, outages: 1 });
  });
});

describe("connection cuts and stalls", () => {
  it("connections cut every 100 ms while users read their views: every session lookup and view answers 200", async () => {
    // The deadline outlasts the 2 s of cuts several times over: a request that met only cut connections from its
    // first attempt still retries past them, and so does its answer's charge, whose sync the cuts can hit too (on
    // a loaded machine a retry's new connection takes a while). With a deadline as long as the cuts, such a request
    // got its 503 by the clock (about 1 run in 5, on the code before issue 20 too), not because a retry was missing.
    const { gw, proxy } = await faultyGateway({ request_timeout_ms: 8000, connect_timeout_ms: 2000 });
    await freshUser(gw);
    const { token } = await logIn(gw.url, `faults-${users}@example.test`, "password-123");
    const view = (path: string) =>
      fetch(`${gw.url}/api/v1/user/${path}`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(HANG_MS) });
    const cutsBefore = proxy.stats().cut;
    const cutting = proxy.cutEvery(100, 2000);
    const statuses: number[] = [];
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        for (let i = 0; i < 10; i++) {
          for (const path of ["quota", "requests"]) {
            const res = await view(path);
            statuses.push(res.status);
            await res.arrayBuffer();
          }
        }
      }),
    );
    await cutting;
    expect(proxy.stats().cut - cutsBefore).toBeGreaterThan(5);
    expect(statuses).toHaveLength(80);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
  });

  it("connections cut every 100 ms during a burst of 50 chat requests: every answer 200, each charged and logged once", async () => {
    // The deadline outlasts the 2 s of cuts and two connection attempts cut in their handshake (each waits out
    // connect_timeout_ms): a charge whose syncs met only cut connections still commits past them. With 5 s, such an
    // answer got its 503 by the clock about 1 run in 5 on a loaded machine, not because a retry was missing. A few
    // of the burst's first answers waiting out the 8 s with no statement in flight were a lease's sync loop that
    // stopped after sending a sync again (docs/architecture.md, "Database faults"); the failure message carries the
    // database's slow statements, the pool and the ledger as they were.
    const { gw, proxy, pool, lines } = await faultyGateway({ request_timeout_ms: 8000, connect_timeout_ms: 2000 });
    const burstUsers = [await freshUser(gw), await freshUser(gw)];
    const slow = sampleSlowStatements(db.pool, pool);
    const cutting = proxy.cutEvery(100, 2000);
    // Five clients at once, ten requests each in a row, spread over the cuts; two users, so two accounts. The
    // body of an answer other than 200 is kept, so that a failure shows which error it was.
    const answers = await Promise.all(
      Array.from({ length: 5 }, async (_, client) => {
        const user = burstUsers[client % 2]!;
        const mine: { userId: string; status: number; requestId: string | null; body?: string }[] = [];
        for (let i = 0; i < 10; i++) {
          const res = await chat(gw, user.key, SMALL, `Client ${client}, request ${i}`);
          const text = await res.text();
          mine.push({
            userId: user.id,
            status: res.status,
            requestId: res.headers.get("x-request-id"),
            ...(res.status === 200 ? {} : { body: text }),
          });
          await sleep(150);
        }
        return mine;
      }),
    );
    await cutting;
    const all = answers.flat();
    // With what the gateway logged, should it fail.
    const refused = all.filter((a) => a.status !== 200);
    const told = lines.filter((l) => Number(l.level) >= 40 || refused.some((a) => a.requestId === l.req_id));
    const seen = {
      told: told.slice(-30),
      slowStatements: await slow.stop(),
      ledger: gw.services.ledger.stats(),
      pool: [pool.totalCount, pool.idleCount, pool.waitingCount],
    };
    expect(
      refused,
      JSON.stringify(seen, (_k, v: unknown) => (typeof v === "bigint" ? String(v) : v)),
    ).toEqual([]);
    // The cuts dropped live connections (the pool's and the key cache's LISTEN), not those of an idle proxy.
    expect(proxy.stats().cut).toBeGreaterThanOrEqual(10);
    for (const user of burstUsers) {
      const answered = all.filter((a) => a.userId === user.id).map((a) => a.requestId);
      const s = await settled([gw], user.id, answered.length);
      expect(s.logs.map((l) => l.request_id).sort()).toEqual(answered.sort());
      expect(s.logs.every((l) => l.status === 200)).toBe(true);
    }
  });

  it("a stall gives 503 (not a hang, not a 500) to requests that need the database; after it everything works", async () => {
    const faulty = await faultyGateway({ request_timeout_ms: 500, connect_timeout_ms: 500, query_timeout_ms: 300 });
    const { gw, proxy } = faulty;
    const user = await freshUser(gw);
    const stranger = await freshUser(gw);
    const before = await warmUp(faulty, user);
    proxy.stall();
    const stalledAt = performance.now();
    // A cached key and a reservation its lease covers reach the upstream, but the answer waits for its charge: the
    // sync that carries it stalls with its connection, so its outcome is unknown until the database answers again
    // (then 200 with its charge), unless it was withdrawn first (503, nothing charged).
    const covered = chat(gw, user.key);
    // A login is a write nothing retries: its statement times out at query_timeout_ms and it is 503 too.
    const login = fetch(`${gw.url}/api/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: `faults-${users}@example.test`, password: "password-123" }),
      signal: AbortSignal.timeout(HANG_MS),
    });
    const [unknownKey, uncovered, ready, loggingIn] = await Promise.all([
      chat(gw, stranger.key),
      chat(gw, user.key, BIG),
      probe(gw, "/readyz"),
      login,
    ]);
    await expectDatabaseUnavailable(unknownKey);
    await expectDatabaseUnavailable(uncovered);
    expect(ready.status).toBe(503);
    await expectDatabaseUnavailable(loggingIn);
    await sleep(Math.max(0, 1500 - (performance.now() - stalledAt)));
    proxy.resume();
    const coveredAnswer = await covered;
    expect([200, 503]).toContain(coveredAnswer.status);
    expect((await chat(gw, stranger.key)).status).toBe(200);
    expect((await chat(gw, user.key, BIG)).status).toBe(200);
    expect((await probe(gw, "/readyz")).status).toBe(200);
    // The warm-up, the covered one, the big one after the stall: each charged once; the refusal logged, uncharged.
    const s = await settled([gw], user.id, before + 2);
    expect(s.logs.find((l) => l.request_id === uncovered.headers.get("x-request-id"))).toMatchObject({ status: 503, quota_charged: "0" });
    // The covered one is charged exactly when its client got the answer.
    const coveredRow = s.logs.find((l) => l.request_id === coveredAnswer.headers.get("x-request-id"));
    if (coveredAnswer.status === 200) expect(coveredAnswer.headers.get("x-gateway-charge")).toBe(coveredRow!.quota_charged);
    else expect(coveredRow).toMatchObject({ status: 503, quota_charged: "0" });
    await settled([gw], stranger.id, 1);
  });
});

describe("the request-log writer through an outage", () => {
  const logRow = (userId: string): RequestLogRow => ({
    requestId: `req_${randomBytes(16).toString("hex")}`,
    userId,
    keyId: randomUUID(),
    route: "/v1/chat/completions",
    clientProtocol: "openai",
    publicModel: "chat",
    upstreamModel: "mock-gpt-small",
    provider: "mock",
    fallbackPath: [],
    status: 503,
    errorClass: "unavailable",
    errorCode: "database_unavailable",
    inputTokens: 0,
    outputTokens: 0,
    cachedTokens: 0,
    quotaCharged: 0n,
    costUsd: null,
    upstreamCostUsd: null,
    usageSource: "none",
    gptImageUsageFallback: null,
    latencyMs: 1.5,
    ttfbMs: null,
    streamed: false,
    receivedAt: new Date(),
    createdAt: new Date(),
  });

  async function writerThroughProxy(options: Partial<RequestLogWriterOptions>) {
    const proxy = await startPgFaultProxy(db.url);
    cleanups.push(() => proxy.close());
    const pool = createPool(proxy.url, 2, () => {}, { connectTimeoutMs: 500 });
    cleanups.push(() => pool.end());
    const writer = createRequestLogWriter({
      pool,
      logger: createLogger("silent"),
      batchSize: 500,
      flushIntervalMs: 100,
      maxBuffered: 100_000,
      statementTimeoutMs: 10_000,
      ...options,
    });
    cleanups.push(async () => {
      proxy.up();
      await writer.close();
    });
    return { proxy, writer };
  }

  const stored = async (userId: string) =>
    (await rowsOf(db.pool, "select request_id from request_logs where user_id = $1", [userId])).map((r) => r.request_id as string).sort();

  it("buffers the 60,000 rows of 60 s at 1,000 requests/s while the database is down, then writes each once, dropping none", async () => {
    const { proxy, writer } = await writerThroughProxy({});
    const userId = randomUUID();
    proxy.down();
    const ids: string[] = [];
    for (let i = 0; i < 60_000; i++) {
      const row = logRow(userId);
      ids.push(row.requestId);
      writer.write(row);
    }
    await writer.flush();
    expect(writer.stats()).toMatchObject({ written: 0, dropped: 0, buffered: 60_000 });
    expect(writer.stats().failedFlushes).toBeGreaterThan(0);
    proxy.up();
    // The writer's own timer takes the rows out once the database answers.
    await expect.poll(() => writer.stats().written, { interval: 100, timeout: 20_000 }).toBe(60_000);
    expect(writer.stats()).toMatchObject({ dropped: 0, buffered: 0 });
    expect(await stored(userId)).toEqual(ids.sort());
  });

  it("with max_buffered below the rows written while down, drops exactly the excess, counts it, and writes the rest once", async () => {
    // Only flush() or a full batch starts a write.
    const { proxy, writer } = await writerThroughProxy({ maxBuffered: 1000, flushIntervalMs: 60_000 });
    const userId = randomUUID();
    proxy.down();
    const ids = new Set<string>();
    for (let i = 0; i < 3000; i++) {
      const row = logRow(userId);
      ids.add(row.requestId);
      writer.write(row);
    }
    await writer.flush();
    expect(writer.stats()).toMatchObject({ written: 0, dropped: 2000, buffered: 1000 });
    proxy.up();
    await writer.flush();
    expect(writer.stats()).toMatchObject({ written: 1000, dropped: 2000, buffered: 0 });
    const rows = await stored(userId);
    expect(rows).toHaveLength(1000);
    expect(rows.filter((id) => !ids.has(id))).toEqual([]);
  });
});
