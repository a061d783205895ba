import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { addDays, dayOf, partitionDay, partitionName, type Day } from "../../src/analytics/partition-days.js";
import { ensurePartitions, moveUnpartitioned } from "../../src/analytics/partitions.js";
import { listUserRequests } from "../../src/analytics/queries.js";
import { pruneRequestLogs } from "../../src/analytics/retention-sql.js";
import { requestRowRange, retainedSince } from "../../src/analytics/log-range.js";
import { encodeRow, INSERT_ROWS, rewriteRows } from "../../src/analytics/row-json.js";
import type { RequestLogRow } from "../../src/analytics/types.js";
import { createPool, type Pool, type Queryable } from "../../src/db/pool.js";
import { newRequestId } from "../../src/ids.js";
import { findOwnRequest } from "../../src/support/cases/cases-sql.js";
import { raiseFromLog } from "../../src/support/incidents/incidents-sql.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { requestLogRow } from "../helpers/request-log-row.js";

// The request log partitioned by UTC day (docs/architecture.md, "The request log"): partitions made ahead by
// racing processes, retention by dropping whole days after their rollups, the move of the rows of the table as it
// was before migration 0025, and every read of the log reading only the partitions of its time range.

const DAY_MS = 86_400_000;

const logRow = (overrides: Partial<RequestLogRow> = {}): RequestLogRow => requestLogRow({ fallbackPath: ["main"], ...overrides });

async function insert(db: Queryable, rows: RequestLogRow[]): Promise<void> {
  await db.query(INSERT_ROWS, [`[${rows.map((r) => encodeRow(r)!).join(",")}]`]);
}

async function today(pool: Pool): Promise<Day> {
  const { rows } = await pool.query<{ today: string }>("select (now() at time zone 'UTC')::date::text as today");
  return rows[0]!.today;
}

/** The day partitions attached to request_logs, by name. */
async function attached(pool: Pool): Promise<string[]> {
  const { rows } = await pool.query<{ name: string }>(
    "select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid where i.inhparent = 'request_logs'::regclass order by 1",
  );
  return rows.map((r) => r.name);
}

const at = (day: Day, hours: number) => new Date(Date.parse(`${day}T00:00:00.000Z`) + hours * 3_600_000);

let db: TestDatabase;
let now: Day;
beforeAll(async () => {
  db = await createTestDatabase();
  now = await today(db.pool);
});
afterAll(() => db?.drop());

describe("partition creation", () => {
  it("8 processes creating the same days at once all succeed, each day exists once, and a row the DEFAULT partition held moves into its day", async () => {
    const from = addDays(now, 20);
    const to = addDays(now, 30);
    const early = logRow({ createdAt: at(addDays(now, 25), 7) });
    await insert(db.pool, [early]);
    expect((await db.pool.query("select 1 from request_logs_default")).rowCount).toBe(1);

    const pools = Array.from({ length: 8 }, () => createPool(db.url, 2, () => {}));
    try {
      const created = await Promise.all(pools.map((pool) => ensurePartitions(pool, from, to)));
      expect(created.reduce((a, b) => a + b, 0)).toBe(11);
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
    const names = await attached(db.pool);
    for (let day = from; day <= to; day = addDays(day, 1)) expect(names.filter((n) => n === partitionName(day))).toHaveLength(1);
    expect((await db.pool.query("select 1 from request_logs_default")).rowCount).toBe(0);
    const moved = await db.pool.query(`select request_id from "${partitionName(addDays(now, 25))}"`);
    expect(moved.rows).toEqual([{ request_id: early.requestId }]);
    // A rerun creates nothing.
    expect(await ensurePartitions(db.pool, from, to)).toBe(0);
  });
});

describe("retention by dropping day partitions", () => {
  const retentionDays = 90;
  const aggregate = `select day::text, user_id, public_model, route, requests::text, errors::text, estimated::text,
    input_tokens::text, output_tokens::text, cached_tokens::text, quota_charged::text, cost_usd::text, upstream_cost_usd::text,
    upstream_unpriced::text`;
  // What the rollups must hold, computed from the rows before retention by a plain aggregate.
  const expected = (where: string) => `${aggregate} from (
    select (created_at at time zone 'UTC')::date as day, user_id, left(public_model, 128) as public_model, route,
      count(*) as requests, count(*) filter (where status >= 400) as errors,
      count(*) filter (where usage_source = 'estimated') as estimated, sum(input_tokens) as input_tokens,
      sum(output_tokens) as output_tokens, sum(cached_tokens) as cached_tokens, sum(quota_charged) as quota_charged,
      coalesce(sum(cost_usd), 0) as cost_usd, coalesce(sum(upstream_cost_usd), 0) as upstream_cost_usd,
      count(*) filter (where upstream_cost_usd is null) as upstream_unpriced
    from request_logs where ${where} group by 1, 2, 3, 4) x order by 1, 2, 3, 4`;
  const rollups = `${aggregate} from request_log_rollups order by 1, 2, 3, 4`;

  function exoticRows(day: Day, user: string): RequestLogRow[] {
    const long = "m".repeat(200);
    return [
      logRow({ userId: user, createdAt: at(day, 0), quotaCharged: 9_007_199_254_740_991n, costUsd: "0.000000000001" }),
      logRow({
        userId: user,
        createdAt: at(day, 23.999),
        publicModel: long,
        status: 500,
        errorCode: "upstream_error",
        upstreamCostUsd: "123456789.123456789",
      }),
      logRow({ userId: user, createdAt: at(day, 12), publicModel: `${long}x`, usageSource: "estimated", inputTokens: 2_147_483_647 }),
      logRow({
        userId: user,
        createdAt: at(day, 6),
        status: 429,
        quotaCharged: 0n,
        upstreamCostUsd: "0",
        costUsd: "99999999999999.999999",
      }),
      logRow({ userId: randomUUID(), createdAt: at(day, 1), route: "/v1/messages", cachedTokens: 7 }),
    ];
  }

  it("rolls up exactly the rows of every day partition past the cutoff and of the DEFAULT partition, then drops the partitions", async () => {
    const user = randomUUID();
    const old = [addDays(now, -100), addDays(now, -99), addDays(now, -98)];
    await ensurePartitions(db.pool, old[0]!, old[2]!);
    const kept = addDays(now, -1);
    await ensurePartitions(db.pool, kept, kept);
    // A day without a partition: its rows sit in the DEFAULT partition.
    const stray = addDays(now, -400);
    await insert(db.pool, [...old.flatMap((day) => exoticRows(day, user)), ...exoticRows(stray, user), ...exoticRows(kept, user)]);
    const before = await db.pool.query(expected(`created_at < '${addDays(now, -90)}'`));
    const keptRows = await db.pool.query(`select request_id from request_logs where created_at >= '${kept}' order by 1`);

    const first = await pruneRequestLogs(db.pool, retentionDays, 2);
    expect(first).toMatchObject({ rows: 20, partitions: 3, deferred: 0 });
    expect((await db.pool.query(rollups)).rows).toEqual(before.rows);
    const names = await attached(db.pool);
    for (const day of old) expect(names).not.toContain(partitionName(day));
    for (const day of old) expect((await db.pool.query("select to_regclass($1) as t", [partitionName(day)])).rows[0].t).toBeNull();
    const days = await db.pool.query<{ day: string }>("select day::text from request_log_days order by 1");
    expect(days.rows.map((r) => r.day)).toEqual(old);
    expect((await db.pool.query(`select request_id from request_logs where created_at >= '${kept}' order by 1`)).rows).toEqual(
      keptRows.rows,
    );
    expect((await db.pool.query("select 1 from request_logs where created_at < now() - interval '90 days'")).rowCount).toBe(0);

    // A rerun rolls up and drops nothing.
    expect(await pruneRequestLogs(db.pool, retentionDays, 2)).toMatchObject({ rows: 0, partitions: 0, deferred: 0 });
    expect((await db.pool.query(rollups)).rows).toEqual(before.rows);
  });

  it("a run cut short after the detach rolls the detached day up once; a day recorded before is only dropped", async () => {
    const detachedDay = addDays(now, -95);
    const recordedDay = addDays(now, -94);
    await ensurePartitions(db.pool, detachedDay, recordedDay);
    const user = randomUUID();
    await insert(db.pool, [...exoticRows(detachedDay, user), ...exoticRows(recordedDay, user)]);
    const before = await db.pool.query(rollups);
    const detachedSums = await db.pool.query(expected(`created_at >= '${detachedDay}' and created_at < '${recordedDay}'`));
    // The state a crash between the two steps leaves: the table detached, nothing rolled up.
    await db.pool.query(`alter table request_logs detach partition "${partitionName(detachedDay)}"`);
    // And a day whose rollups a run added, as if its drop had been lost.
    await db.pool.query("insert into request_log_days (day) values ($1)", [recordedDay]);

    const run = await pruneRequestLogs(db.pool, retentionDays, 100);
    expect(run).toMatchObject({ rows: 5, partitions: 2, deferred: 0 });
    const after = await db.pool.query(rollups);
    const sorted = (rows: unknown[]) => rows.map((row) => JSON.stringify(row)).sort();
    expect(sorted(after.rows)).toEqual(sorted([...before.rows, ...detachedSums.rows]));
    for (const day of [detachedDay, recordedDay])
      expect((await db.pool.query("select to_regclass($1) as t", [partitionName(day)])).rows[0].t).toBeNull();
  });

  it("leaves a day whose partition is locked by a long reader for the next run, having rolled nothing up", async () => {
    const day = addDays(now, -93);
    await ensurePartitions(db.pool, day, day);
    await insert(db.pool, exoticRows(day, randomUUID()));
    const before = await db.pool.query(rollups);
    const reader = await db.pool.connect();
    try {
      await reader.query("begin");
      await reader.query(`select count(*) from request_logs where created_at >= '${day}' and created_at < '${addDays(day, 1)}'`);
      expect(await pruneRequestLogs(db.pool, retentionDays, 100)).toMatchObject({ rows: 0, partitions: 0, deferred: 1 });
      expect((await db.pool.query(rollups)).rows).toEqual(before.rows);
    } finally {
      await reader.query("rollback");
      reader.release();
    }
    expect(await pruneRequestLogs(db.pool, retentionDays, 100)).toMatchObject({ rows: 5, partitions: 1, deferred: 0 });
  });
});

describe("the move of the table as it was before migration 0025", () => {
  it("moves every row exactly once beside concurrent writes, then drops the old table; retention waits for it", async () => {
    // The old table as the migration leaves it (request_id its key).
    await db.pool.query(`create table request_logs_unpartitioned (like request_logs including defaults including constraints);
      alter table request_logs_unpartitioned add primary key (request_id);
      create index on request_logs_unpartitioned (created_at)`);
    const old = Array.from({ length: 1200 }, (_, i) => logRow({ createdAt: new Date(Date.now() - 40 * DAY_MS + i * 2_600_000) }));
    for (let i = 0; i < old.length; i += 300) {
      const rows = old.slice(i, i + 300).map((r) => encodeRow(r)!);
      await db.pool.query(
        INSERT_ROWS.replace("insert into request_logs", "insert into request_logs_unpartitioned").replace(
          "(request_id, created_at)",
          "(request_id)",
        ),
        [`[${rows.join(",")}]`],
      );
    }
    // A batch the writer retried across the upgrade: its rows are in both tables.
    await insert(db.pool, old.slice(0, 5));
    expect(await pruneRequestLogs(db.pool, 30, 100)).toMatchObject({ partitions: 0 });

    const movers = [createPool(db.url, 2, () => {}), createPool(db.url, 2, () => {})];
    const fresh: RequestLogRow[] = [];
    try {
      const writes = (async () => {
        for (let i = 0; i < 20; i++) {
          const batch = Array.from({ length: 25 }, () => logRow());
          fresh.push(...batch);
          await insert(db.pool, batch);
        }
      })();
      const results = await Promise.all([...movers.map((pool) => moveUnpartitioned(pool, 97)), writes]);
      const moved = results.slice(0, 2) as { rows: number; done: boolean }[];
      expect(moved[0]!.rows + moved[1]!.rows).toBe(old.length);
    } finally {
      await Promise.all(movers.map((pool) => pool.end()));
    }
    // Whichever mover lost the lock left the drop to the other or to the next run.
    expect(await moveUnpartitioned(db.pool, 97)).toEqual({ rows: 0, done: true });
    expect((await db.pool.query("select to_regclass('request_logs_unpartitioned') as t")).rows[0].t).toBeNull();
    const ids = [...old, ...fresh].map((r) => r.requestId);
    const { rows } = await db.pool.query<{ n: number }>("select count(*)::int as n from request_logs where request_id = any($1)", [ids]);
    expect(rows[0]!.n).toBe(ids.length);
    // The days the old rows span were made first: none waits in the DEFAULT partition.
    const oldIds = old.map((r) => r.requestId);
    expect((await db.pool.query("select 1 from request_logs_default where request_id = any($1)", [oldIds])).rowCount).toBe(0);
  });
});

describe("every read of the log names a time range", () => {
  /** The relations a statement read (a node that ran at least once), from EXPLAIN ANALYZE, in a rolled-back transaction. */
  async function scanned(query: { text: string; values: unknown[] }): Promise<string[]> {
    const client = await db.pool.connect();
    try {
      await client.query("begin");
      const { rows } = await client.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>({
        text: `explain (analyze, format json) ${query.text}`,
        values: query.values,
      });
      const names = new Set<string>();
      const walk = (node: PlanNode) => {
        if (node["Relation Name"]?.startsWith("request_logs_") && (node["Actual Loops"] ?? 0) > 0) names.add(node["Relation Name"]);
        for (const child of node.Plans ?? []) walk(child);
      };
      walk(rows[0]!["QUERY PLAN"][0].Plan);
      return [...names].sort();
    } finally {
      await client.query("rollback");
      client.release();
    }
  }
  interface PlanNode {
    "Relation Name"?: string;
    "Actual Loops"?: number;
    Plans?: PlanNode[];
  }

  /** A Queryable that keeps the statement it is given instead of running it. */
  function recorder(): { db: Queryable; last: () => { text: string; values: unknown[] } } {
    let last: { text: string; values: unknown[] } | undefined;
    const db = {
      query: (config: string | { text: string; values?: unknown[] }, values?: unknown[]) => {
        last = typeof config === "string" ? { text: config, values: values ?? [] } : { text: config.text, values: config.values ?? [] };
        return Promise.resolve({ rows: [], rowCount: 0 });
      },
    } as unknown as Queryable;
    return { db, last: () => last! };
  }

  const partitionsOf = (from: Day, to: Day) => {
    const names: string[] = [];
    for (let day = from; day <= to; day = addDays(day, 1)) names.push(partitionName(day));
    return names;
  };
  const user = randomUUID();

  beforeAll(async () => {
    await ensurePartitions(db.pool, addDays(now, -12), addDays(now, 3));
    const rows: RequestLogRow[] = [];
    for (let d = -12; d <= 0; d++)
      rows.push(logRow({ userId: user, createdAt: at(addDays(now, d), 0.5), status: 500, errorCode: "upstream_error" }));
    await insert(db.pool, rows);
  });

  it("the user's list: the first page from the retention's bound, a next page up to its cursor", async () => {
    const r = recorder();
    const since = retainedSince(new Date(), 7)!;
    await listUserRequests(r.db, user, { limit: 20 }, since);
    const first = await scanned(r.last());
    // Without an upper bound, the days made ahead are read too (each an empty index).
    const before = (day: Day) => (name: string) => (partitionDay(name) ?? day) < day;
    expect(first.filter(before(dayOf(since)))).toEqual([]);
    expect(first).toContain(partitionName(now));
    expect(first).toContain(partitionName(dayOf(since)));

    const t = `${addDays(now, -3)}T12:00:00.000000Z`;
    const cursor = Buffer.from(JSON.stringify({ t, id: "req_z" })).toString("base64url");
    await listUserRequests(r.db, user, { limit: 20, cursor }, since);
    const next = await scanned(r.last());
    const allowedNext = new Set([...partitionsOf(dayOf(since), addDays(now, -3)), "request_logs_default"]);
    expect(next.filter((name) => !allowedNext.has(name))).toEqual([]);
    expect(next).toContain(partitionName(addDays(now, -3)));
  });

  it("the support diagnosis: from the id's time to the longest a request takes to resolve; an old random id, the retention window", async () => {
    const r = recorder();
    const minted = at(addDays(now, -6), 12);
    const id = newRequestId(minted.getTime());
    await findOwnRequest(r.db, user, id, requestRowRange(id, new Date(), 7, 24 * 3600 * 1000));
    const read = await scanned(r.last());
    expect(
      read.filter((name) => !new Set([...partitionsOf(addDays(now, -6), addDays(now, -5)), "request_logs_default"]).has(name)),
    ).toEqual([]);
    expect(read).toContain(partitionName(addDays(now, -6)));

    const random = `req_${randomUUID().replaceAll("-", "")}`;
    const range = requestRowRange(random, new Date(), 7, 24 * 3600 * 1000);
    await findOwnRequest(r.db, user, random, range);
    const old = await scanned(r.last());
    expect(old).not.toContain(partitionName(addDays(now, -12)));
    expect(old).toContain(partitionName(now));
  });

  it("the incidents' scan: its window only", async () => {
    const r = recorder();
    // The log is read on its own connection (it may live apart): that read is the one recorded.
    await raiseFromLog(db.pool, r.db, 60, 1, 0.1);
    const read = await scanned(r.last());
    const window = new Set([...partitionsOf(dayOf(new Date(Date.now() - 3_600_000)), now), "request_logs_default"]);
    expect(read.filter((name) => !window.has(name))).toEqual([]);
    expect(read).toContain(partitionName(now));
  });

  it("a refund's rewrite: the days of the rows it rewrites", async () => {
    const row = logRow({ userId: user, createdAt: at(addDays(now, -4), 3) });
    await insert(db.pool, [row]);
    const read = await scanned({ text: rewriteRows("$1::json"), values: [`[${encodeRow({ ...row, status: 503, quotaCharged: 0n })!}]`] });
    expect(read).toEqual([partitionName(addDays(now, -4))]);
  });
});
