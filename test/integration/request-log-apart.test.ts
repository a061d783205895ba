import { randomBytes, randomUUID } from "node:crypto";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inject } from "vitest";
import { startOutboxDrainer } from "../../src/analytics/outbox-drainer.js";
import { reconcileLog } from "../../src/analytics/log-reconcile.js";
import { outboxInserts } from "../../src/analytics/outbox-sql.js";
import { encodeRow } from "../../src/analytics/row-json.js";
import type { RequestLogRow } from "../../src/analytics/types.js";
import type { Pool } from "../../src/db/pool.js";
import { createLogger } from "../../src/logger.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { withAdmin } from "../helpers/admin-db.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";
import { until } from "../helpers/poll.js";
import { requestLogRow } from "../helpers/request-log-row.js";

// The request log on a database of its own (analytics.database_url; docs/billing.md, "The request log apart"): two
// databases on one server, a real gateway between them. Every charge commits on the main database with its outbox
// record, and the drainer moves the records to the analytics database exactly once: through a crash between the
// two commits, and through an outage of the analytics database under load.

const DRAIN_LOCK = "select pg_advisory_xact_lock(hashtext('request_log_outbox_drain'))";
/** A charged log row of `userId` that no hold paid for. */
const straySample = (userId: string): RequestLogRow =>
  requestLogRow({
    requestId: "",
    userId,
    publicModel: "chatty",
    provider: null,
    inputTokens: 1,
    outputTokens: 1,
    quotaCharged: 7n,
    latencyMs: 1,
  });

/** A member of `target` as it is, methods bound to it. */
function bound<T extends object>(target: T, prop: string | symbol): unknown {
  const value: unknown = Reflect.get(target, prop, target);
  return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
}
const nameOf = (db: TestDatabase) => new URL(db.url).pathname.slice(1);

async function countsById(pool: Pool, ids: string[]): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ request_id: string; n: number }>(
    "select request_id, count(*)::int as n from request_logs where request_id = any($1::text[]) group by 1",
    [ids],
  );
  return new Map(rows.map((r) => [r.request_id, r.n]));
}

const outboxDepth = async (pool: Pool) => (await pool.query<{ n: number }>("select count(*)::int as n from request_log_outbox")).rows[0]!.n;

/** Σ charged of the posted holds of `ids` (main) and Σ quota_charged of their log rows (analytics). */
async function charges(main: Pool, analytics: Pool, ids: string[]) {
  const held = await main.query<{ n: string }>(
    "select coalesce(sum(charged), 0)::text as n from quota_holds where status = 'posted' and request_id = any($1::text[])",
    [ids],
  );
  const logged = await analytics.query<{ n: string }>(
    "select coalesce(sum(quota_charged), 0)::text as n from request_logs where request_id = any($1::text[])",
    [ids],
  );
  return { held: BigInt(held.rows[0]!.n), logged: BigInt(logged.rows[0]!.n) };
}

describe("the request log apart, through a real gateway", () => {
  let mock: MockUpstream;
  let main: TestDatabase;
  let analytics: TestDatabase;
  let gw: TestGateway;
  let user: { id: string; key: string; token: string };

  beforeAll(async () => {
    mock = await startMockUpstream();
    main = await createTestDatabase();
    analytics = await createTestDatabase();
    gw = await startTestGateway({
      db: main,
      logPool: analytics.pool,
      config: {
        providers: { mock: { protocol: "openai", base_url: mock.baseUrl } },
        models: { chatty: { kind: "chat", upstream: "chatty-1", targets: ["mock"] } },
        plans: { basic: { daily_tokens: 100_000_000, context_limit: 100_000 } },
        default_plan: "basic",
        analytics: { flush_interval_ms: 20, outbox_interval_ms: 20, outbox_batch_size: 50 },
      },
    });
    const email = `apart-${randomBytes(4).toString("hex")}@example.test`;
    const created = await gw.services.auth.users.create({ email, password: "password-123" });
    const { key } = await gw.services.auth.apiKeys.create({ user: email });
    const { token } = await logIn(gw.url, email, "password-123");
    user = { id: created.id, key, token };
  });

  afterAll(async () => {
    await gw?.close();
    await mock?.close();
    await analytics?.drop();
    await main?.drop();
  });

  async function chat(): Promise<{ status: number; id: string }> {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${user.key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "chatty", messages: [{ role: "user", content: `hello ${randomUUID()}` }] }),
    });
    await res.text();
    return { status: res.status, id: res.headers.get("x-request-id")! };
  }

  async function openCase(requestId: string) {
    const res = await fetch(`${gw.url}/api/v1/user/assistant/cases`, {
      method: "POST",
      headers: { authorization: `Bearer ${user.token}`, "content-type": "application/json" },
      body: JSON.stringify({ request_id: requestId, locale: "en" }),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  /** Waits until every id has its row in analytics and the outbox is empty; answers the rows' counts. */
  async function drained(ids: string[]) {
    return until("every charged request's row in the analytics database", async () => {
      const counts = await countsById(analytics.pool, ids);
      return counts.size === ids.length && (await outboxDepth(main.pool)) === 0 ? counts : undefined;
    });
  }

  it("charges on main, and the rows appear in analytics exactly once, read by the user's list and the diagnosis", async () => {
    const answers = await Promise.all(Array.from({ length: 12 }, () => chat()));
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 200));
    const ids = answers.map((a) => a.id);
    const counts = await drained(ids);
    expect([...counts.values()]).toEqual(ids.map(() => 1));
    // The main database's log table is not written.
    expect((await main.pool.query("select 1 from request_logs")).rowCount).toBe(0);
    const sums = await until("the charges posted", async () => {
      const s = await charges(main.pool, analytics.pool, ids);
      return s.held > 0n && s.held === s.logged ? s : undefined;
    });
    expect(sums.logged).toBe(sums.held);

    const list = await fetch(`${gw.url}/api/v1/user/requests?limit=100`, { headers: { authorization: `Bearer ${user.token}` } });
    expect(list.status).toBe(200);
    const listed = ((await list.json()) as { requests: { request_id: string }[] }).requests.map((r) => r.request_id);
    expect(listed).toEqual(expect.arrayContaining(ids));

    expect((await openCase(ids[0]!)).status).toBe(201);
  });

  it("a request whose record is still in the outbox is the diagnosis's 404, retried later once drained", async () => {
    const holder: pg.PoolClient = await main.pool.connect();
    let id: string;
    try {
      await holder.query("begin");
      await holder.query(DRAIN_LOCK);
      const answer = await chat();
      expect(answer.status).toBe(200);
      id = answer.id;
      await until("the request's record in the outbox", async () => {
        const { rowCount } = await main.pool.query("select 1 from request_log_outbox where record->>'request_id' = $1", [id]);
        return rowCount === 1 ? true : undefined;
      });
      const early = await openCase(id);
      expect(early.status).toBe(404);
      expect(JSON.stringify(early.body)).toContain("retry shortly");
    } finally {
      await holder.query("commit");
      holder.release();
    }
    await drained([id]);
    expect((await openCase(id)).status).toBe(201);
  });

  it("an outage of the analytics database under load: every answer 200 and charged, then every row once", async () => {
    const name = nameOf(analytics);
    const adminUrl = inject("adminDatabaseUrl");
    const ids: string[] = [];
    const statuses: number[] = [];
    let sending = true;
    const clients = Array.from({ length: 4 }, async () => {
      while (sending) {
        const { status, id } = await chat();
        statuses.push(status);
        ids.push(id);
      }
    });
    const failedBefore = gw.services.outbox!.stats().failedRounds;
    try {
      await until("some requests before the outage", () => (ids.length >= 10 ? true : undefined));
      // The analytics database refuses writes (25006) and its sessions are cut (57P01).
      await withAdmin(adminUrl, async (c) => {
        await c.query(`alter database ${name} set default_transaction_read_only = on`);
        await c.query("select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()", [name]);
      });
      await until("the outbox growing while analytics refuses", async () =>
        gw.services.outbox!.stats().failedRounds > failedBefore && (await outboxDepth(main.pool)) >= 20 ? true : undefined,
      );
    } finally {
      await withAdmin(adminUrl, async (c) => {
        await c.query(`alter database ${name} reset default_transaction_read_only`);
        await c.query("select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()", [name]);
      });
      const atRestore = statuses.length;
      await until("more requests after the outage", () => (statuses.length >= atRestore + 10 ? true : undefined));
      sending = false;
      await Promise.all(clients);
    }
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    const counts = await drained(ids);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    expect(counts.size).toBe(ids.length);
    const sums = await until("the charges posted", async () => {
      const s = await charges(main.pool, analytics.pool, ids);
      return s.held === s.logged ? s : undefined;
    });
    expect(sums.held).toBeGreaterThan(0n);
  });

  it("reconciles the log with the ledger, and names the request of each difference", async () => {
    const from = new Date(Date.now() - 3_600_000);
    const to = new Date(Date.now() + 3_600_000);
    const clean = await until("the ledger and the log agreeing", async () => {
      const r = await reconcileLog(main.pool, analytics.pool, from, to);
      return r.differences.length === 0 && (await outboxDepth(main.pool)) === 0 ? r : undefined;
    });
    expect(clean.holds).toBeGreaterThan(0);
    expect(clean.loggedTotal).toBe(clean.heldTotal);

    const { rows } = await analytics.pool.query<{ request_id: string; quota_charged: string }>(
      "delete from request_logs where request_id = (select request_id from request_logs where quota_charged > 0 limit 1) returning request_id, quota_charged::text",
    );
    const lost = rows[0]!;
    const stray = `req_${randomBytes(16).toString("hex")}`;
    const strayRow = encodeRow({ ...straySample(user.id), requestId: stray })!;
    await analytics.pool.query(`insert into request_logs select * from json_populate_recordset(null::request_logs, $1::json)`, [
      `[${strayRow}]`,
    ]);
    const r = await reconcileLog(main.pool, analytics.pool, from, to);
    expect(r.differences).toEqual(
      expect.arrayContaining([
        { requestId: lost.request_id, kind: "row_missing", held: BigInt(lost.quota_charged), logged: null },
        { requestId: stray, kind: "hold_missing", held: null, logged: 7n },
      ]),
    );
    expect(r.differences).toHaveLength(2);
  });
});

describe("the outbox drainer", () => {
  let main: TestDatabase;
  let analytics: TestDatabase;

  beforeAll(async () => {
    main = await createTestDatabase();
    analytics = await createTestDatabase();
  });
  afterAll(async () => {
    await analytics?.drop();
    await main?.drop();
  });

  const row = (): RequestLogRow =>
    requestLogRow({ upstreamModel: "m1-1", provider: "mock", inputTokens: 1, outputTokens: 2, quotaCharged: 3n, latencyMs: 1 });

  async function enqueue(records: string[]) {
    await main.pool.query(outboxInserts("$1::json"), [`[${records.join(",")}]`]);
  }

  /** The main pool, whose next `count` outbox deletes fail as a connection lost before the COMMIT does. */
  function crashingDeletes(pool: Pool) {
    let armed = 0;
    let crashed = 0;
    const wrap = (client: pg.PoolClient): pg.PoolClient => {
      const query = (...args: unknown[]) => {
        const config = args[0] as { name?: string } | string;
        if (typeof config === "object" && config.name === "request_log_outbox_delete" && armed > 0) {
          armed--;
          crashed++;
          return Promise.reject(new Error("Connection terminated unexpectedly"));
        }
        return (client.query as (...a: unknown[]) => Promise<unknown>)(...args);
      };
      return new Proxy(client, { get: (target, prop) => (prop === "query" ? query : bound(target, prop)) });
    };
    const proxied = new Proxy(pool, {
      get: (target, prop) => (prop === "connect" ? async () => wrap(await target.connect()) : bound(target, prop)),
    });
    return { pool: proxied, arm: (n: number) => (armed = n), crashed: () => crashed };
  }

  it("delivers a batch again after a crash between the analytics commit and the outbox delete, and stores it once", async () => {
    const rows = Array.from({ length: 30 }, row);
    await enqueue(rows.map((r) => encodeRow(r)!));
    const main2 = crashingDeletes(main.pool);
    main2.arm(1);
    const drainer = startOutboxDrainer({
      main: main2.pool,
      analytics: analytics.pool,
      logger: createLogger("silent"),
      batchSize: 1000,
      intervalMs: 20,
    });
    try {
      await until("the outbox drained", async () => ((await outboxDepth(main.pool)) === 0 ? true : undefined));
    } finally {
      await drainer.close();
    }
    expect(main2.crashed()).toBe(1);
    const counts = await countsById(
      analytics.pool,
      rows.map((r) => r.requestId),
    );
    expect(counts.size).toBe(rows.length);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    // Delivered twice: the first delivery committed in analytics, the redelivery inserted nothing.
    expect(drainer.stats().drained).toBe(rows.length);
  });

  it("quarantines a record the analytics database refuses as data, and drains the others around it", async () => {
    const good = [row(), row(), row()];
    const bad = encodeRow(row())!.replace(/"user_id":"[^"]+"/, '"user_id":"not-a-uuid"');
    await enqueue([encodeRow(good[0]!)!, bad, encodeRow(good[1]!)!, encodeRow(good[2]!)!]);
    const drainer = startOutboxDrainer({
      main: main.pool,
      analytics: analytics.pool,
      logger: createLogger("silent"),
      batchSize: 1000,
      intervalMs: 20,
    });
    try {
      await until("the outbox drained", async () => ((await outboxDepth(main.pool)) === 0 ? true : undefined));
    } finally {
      await drainer.close();
    }
    expect(
      (
        await countsById(
          analytics.pool,
          good.map((r) => r.requestId),
        )
      ).size,
    ).toBe(3);
    const { rows: quarantined } = await main.pool.query<{ error_code: string; user_id: string }>(
      "select error_code, record->>'user_id' as user_id from request_log_outbox_quarantine",
    );
    expect(quarantined).toEqual([{ error_code: "22P02", user_id: "not-a-uuid" }]);
    expect(drainer.stats().quarantined).toBe(1);
  });
});
