import { randomBytes, randomUUID } from "node:crypto";
import { Logger, quickAddJob, runOnce } from "graphile-worker";
import { beforeAll, describe, expect, it } from "vitest";
import { pruneRequestLogs } from "../../src/analytics/retention-sql.js";
import { encodeRow, INSERT_ROWS } from "../../src/analytics/row-json.js";
import type { RequestLogRow } from "../../src/analytics/types.js";
import type { ConfigInput } from "../../src/config/schema.js";
import { taskList } from "../../src/jobs/tasks.js";
import {
  HoldNotFoundError,
  pruneLedger,
  reconcileLedger,
  type DurableHoldInput,
  type QuotaLedger,
  type ReserveInput,
} from "../../src/quota/index.js";
import { createServices } from "../../src/runtime/services.js";
import { createLogger } from "../../src/logger.js";
import type { TestDatabase } from "../helpers/db.js";
import { testConfig } from "../helpers/gateway-app.js";
import { useLedgerFixture } from "../helpers/ledger-fixture.js";
import { restore, snapshot, type Snapshot } from "../helpers/table-snapshot.js";

// Retention (docs/billing.md, "Retention"): resolved holds, ended leases and old request-log rows are deleted,
// rolled up first in the same statement, and every account still reconciles exactly.

const DAY_MS = 86_400_000;
const LEDGER_DAYS = 35;
const LOG_DAYS = 90;

describe("retention of the ledger and the request log", () => {
  const fixture = useLedgerFixture("retention");
  let db: TestDatabase;
  let ledger: QuotaLedger;
  beforeAll(() => void ({ db, ledger } = fixture));

  const daily = (userId: string, amount: bigint): ReserveInput => ({
    kind: "daily_allowance",
    userId,
    base: 100_000n,
    amount,
    requestId: `req_${randomBytes(4).toString("hex")}`,
  });
  /** A request's hold on `on`, posted with `charged` or voided (null); its id. */
  async function request(on: QuotaLedger, input: ReserveInput, charged: bigint | null): Promise<string> {
    const taken = await on.reserve(input);
    if (!taken.ok) throw new Error(`reserve of ${input.amount} refused`);
    await (charged === null ? on.release(taken.hold.id) : on.settle(taken.hold.id, charged));
    return taken.hold.id;
  }
  const durable = (userId: string, amount: bigint, expiresInMs: number): DurableHoldInput => ({
    kind: "daily_allowance",
    userId,
    base: 100_000n,
    id: randomUUID(),
    amount,
    reference: "video:retention",
    expiresAt: new Date(fixture.clock.now().getTime() + expiresInMs),
  });
  async function reserveDurable(input: DurableHoldInput): Promise<string> {
    const taken = await ledger.reserveDurable(input);
    if (!taken.ok) throw new Error("durable hold refused");
    return taken.hold.id;
  }
  const age = (table: "quota_holds" | "quota_leases", column: "resolved_at" | "created_at", ids: string[], days: number) =>
    db.pool.query(`update ${table} set ${column} = now() - $2::int * interval '1 day' where id = any($1::uuid[])`, [ids, days]);
  const leaseOf = async (holdId: string) =>
    (await db.pool.query<{ lease_id: string }>("select lease_id from quota_holds where id = $1", [holdId])).rows[0]!.lease_id;
  const makeDead = (instanceId: string) =>
    db.pool.query("update gateway_instances set last_seen_at = now() - interval '2 hours' where id = $1", [instanceId]);

  /** Labels of the rows the history made, by what the retention must do with them. */
  const gone = { holds: [] as string[], leases: [] as string[] };
  const kept = { holds: [] as string[], leases: [] as string[] };
  let expiredOld = "";
  let expiredRecent = "";

  /**
   * Every kind of row the ledger writes, old and recent: lease holds posted and voided (live, closed and expired
   * leases, an expired lease posted to late), durable holds posted, voided, expired, pending, and expired then
   * posted late, restorations and reseller credits. Old means resolved 40 days ago, past the 35-day retention.
   */
  async function ledgerHistory(): Promise<void> {
    // A live process: its lease stays pending; two old resolved holds, one recent.
    const a = await fixture.newUser();
    const aOld = [await request(ledger, daily(a, 300n), 120n), await request(ledger, daily(a, 300n), null)];
    const aRecent = await request(ledger, daily(a, 300n), 310n);
    await ledger.restore({
      kind: "daily_allowance",
      userId: a,
      base: 100_000n,
      amount: 50n,
      upToSpent: false,
      source: "test",
      reference: `restore-${a}`,
    });
    await ledger.flush();
    await age("quota_holds", "resolved_at", aOld, 40);
    // Old enough, but pending: never deleted.
    await age("quota_leases", "created_at", [await leaseOf(aRecent)], 40);
    gone.holds.push(...aOld);
    kept.holds.push(aRecent);
    kept.leases.push(await leaseOf(aRecent));

    // A process that stopped: its closed lease and all its holds are old.
    const b = await fixture.newUser();
    const stopped = await fixture.process();
    const bHolds = [
      await request(stopped.ledger, daily(b, 500n), 400n),
      await request(stopped.ledger, daily(b, 500n), 700n),
      await request(stopped.ledger, daily(b, 100n), null),
    ];
    await stopped.ledger.close();
    const bLease = await leaseOf(bHolds[0]!);
    await age("quota_holds", "resolved_at", bHolds, 40);
    await age("quota_leases", "resolved_at", [bLease], 40);
    gone.holds.push(...bHolds);
    gone.leases.push(bLease);

    // A closed lease ended long ago whose last hold is recent: the lease stays while the hold refers to it.
    const c = await fixture.newUser();
    const closing = await fixture.process();
    const cOld = await request(closing.ledger, daily(c, 200n), 90n);
    const cRecent = await request(closing.ledger, daily(c, 200n), 80n);
    await closing.ledger.close();
    await age("quota_holds", "resolved_at", [cOld], 40);
    await age("quota_leases", "resolved_at", [await leaseOf(cOld)], 40);
    gone.holds.push(cOld);
    kept.holds.push(cRecent);
    kept.leases.push(await leaseOf(cOld));

    // Processes presumed dead: their leases expire, and a late settlement still posts through them.
    const d = await fixture.newUser();
    const dead1 = await fixture.process();
    const dead2 = await fixture.process();
    const late1 = await dead1.ledger.reserve(daily(d, 250n));
    const late2 = await dead2.ledger.reserve(daily(d, 250n));
    if (!late1.ok || !late2.ok) throw new Error("refused");
    await makeDead(dead1.instance.id);
    await makeDead(dead2.instance.id);
    expect((await ledger.expire()).leases).toBe(2);
    await dead1.ledger.settle(late1.hold.id, 240n);
    await dead2.ledger.settle(late2.hold.id, 230n);
    const [lease1, lease2] = [await leaseOf(late1.hold.id), await leaseOf(late2.hold.id)];
    await age("quota_holds", "resolved_at", [late1.hold.id], 40);
    await age("quota_leases", "resolved_at", [lease1, lease2], 40);
    gone.holds.push(late1.hold.id);
    gone.leases.push(lease1);
    kept.holds.push(late2.hold.id);
    kept.leases.push(lease2);

    // Durable holds on another account.
    const e = await fixture.newUser();
    const posted = await reserveDurable(durable(e, 400n, 3_600_000));
    await ledger.postDurable(posted, 420n);
    const voided = await reserveDurable(durable(e, 400n, 3_600_000));
    await ledger.voidDurable(voided);
    expiredOld = await reserveDurable(durable(e, 300n, -1000));
    expiredRecent = await reserveDurable(durable(e, 300n, -1000));
    const postedLate = await reserveDurable(durable(e, 300n, -1000));
    const pending = await reserveDurable(durable(e, 600n, 3_600_000));
    expect((await ledger.expire()).durable).toBe(3);
    await age("quota_holds", "resolved_at", [posted, voided, expiredOld, postedLate], 40);
    await age("quota_holds", "created_at", [pending], 40);
    // Posted after it expired long ago: the post is its resolution now.
    await expect(ledger.postDurable(postedLate, 310n)).resolves.toMatchObject({ status: "posted" });
    gone.holds.push(posted, voided, expiredOld);
    kept.holds.push(expiredRecent, postedLate, pending);

    // A reseller balance: credits and holds on a perpetual account.
    const r = await fixture.newUser();
    await ledger.creditReseller(r, 1_000_000n, "top-up");
    const reseller = (amount: bigint): ReserveInput => ({ kind: "reseller_usd", userId: r, base: null, amount, requestId: "req_reseller" });
    const rOld = await request(ledger, reseller(5000n), 4200n);
    const rRecent = await request(ledger, reseller(5000n), 4300n);
    await ledger.flush();
    await age("quota_holds", "resolved_at", [rOld], 40);
    gone.holds.push(rOld);
    kept.holds.push(rRecent);
  }

  // The request log: rows past the 90-day retention on two days, and recent ones.
  const loggedRows: RequestLogRow[] = [];
  // At noon UTC, so rows of one day never straddle midnight (and noon of 91 days ago is still past 90 days).
  const today = new Date();
  const noon = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate(), 12);
  function logRow(userId: string, daysAgo: number, extra: Partial<RequestLogRow> = {}): RequestLogRow {
    const createdAt = new Date(noon - daysAgo * DAY_MS);
    return {
      requestId: `req_${randomBytes(16).toString("hex")}`,
      userId,
      keyId: randomUUID(),
      route: "/v1/chat/completions",
      clientProtocol: "openai",
      publicModel: "m1",
      upstreamModel: "m1-2024",
      provider: "main",
      fallbackPath: [],
      status: 200,
      errorClass: null,
      errorCode: null,
      inputTokens: 100,
      outputTokens: 50,
      cachedTokens: 10,
      quotaCharged: 150n,
      costUsd: null,
      upstreamCostUsd: "0.000004200",
      usageSource: "upstream",
      gptImageUsageFallback: null,
      latencyMs: 12.5,
      ttfbMs: 3,
      streamed: false,
      receivedAt: new Date(createdAt.getTime() - 12),
      createdAt,
      ...extra,
    };
  }
  async function logHistory(): Promise<void> {
    const [u1, u2] = [randomUUID(), randomUUID()];
    const rows = [
      logRow(u1, 100),
      logRow(u1, 100, {
        status: 429,
        errorClass: "quota_exceeded",
        errorCode: "insufficient_quota",
        inputTokens: 0,
        outputTokens: 0,
        cachedTokens: 0,
        quotaCharged: 0n,
        upstreamCostUsd: null,
        usageSource: "none",
      }),
      logRow(u1, 100, {
        usageSource: "estimated",
        inputTokens: 7,
        outputTokens: 1_000_000,
        quotaCharged: 1_000_007n,
        upstreamCostUsd: "0.123456789",
      }),
      logRow(u1, 101, { route: "/v1/systemone", publicModel: "eval", quotaCharged: 0n, costUsd: "0.000042", upstreamCostUsd: "0.000042" }),
      logRow(u1, 101, {
        route: "/v1/systemone",
        publicModel: "eval",
        quotaCharged: 0n,
        costUsd: "12.5",
        status: 499,
        usageSource: "estimated",
      }),
      // A model name no config has (a client sent it): rolled up by its first 128 characters.
      logRow(u2, 95, { publicModel: `x${"y".repeat(200)}`, status: 404, upstreamCostUsd: null }),
      logRow(u2, 95, { publicModel: `x${"y".repeat(150)}`, status: 404, upstreamCostUsd: null }),
      logRow(u1, 80),
      logRow(u2, 0),
    ];
    await db.pool.query(INSERT_ROWS, [`[${rows.map((row) => encodeRow(row)!).join(",")}]`]);
    loggedRows.push(...rows);
  }

  /** The request-log rows older than the cutoff, summed the way the rollup must have them (exact, in JS). */
  function expectedLogRollups(cutoff: string) {
    const nano = (usd: string | null) => {
      if (usd === null) return 0n;
      const [whole, frac = ""] = usd.split(".");
      return BigInt(whole!) * 1_000_000_000n + BigInt(frac.padEnd(9, "0"));
    };
    const groups = new Map<string, Record<string, bigint | string>>();
    for (const r of loggedRows.filter((row) => row.createdAt.getTime() < Date.parse(cutoff))) {
      const key = [r.createdAt.toISOString().slice(0, 10), r.userId, r.publicModel.slice(0, 128), r.route];
      const g = groups.get(key.join("|")) ?? {
        day: key[0]!,
        user_id: key[1]!,
        public_model: key[2]!,
        route: key[3]!,
        requests: 0n,
        errors: 0n,
        estimated: 0n,
        input_tokens: 0n,
        output_tokens: 0n,
        cached_tokens: 0n,
        quota_charged: 0n,
        cost_usd: 0n,
        upstream_cost_usd: 0n,
        upstream_unpriced: 0n,
      };
      const add = (k: string, n: bigint) => void (g[k] = (g[k] as bigint) + n);
      add("requests", 1n);
      add("errors", r.status >= 400 ? 1n : 0n);
      add("estimated", r.usageSource === "estimated" ? 1n : 0n);
      add("input_tokens", BigInt(r.inputTokens));
      add("output_tokens", BigInt(r.outputTokens));
      add("cached_tokens", BigInt(r.cachedTokens));
      add("quota_charged", r.quotaCharged);
      add("cost_usd", nano(r.costUsd));
      add("upstream_cost_usd", nano(r.upstreamCostUsd));
      add("upstream_unpriced", r.upstreamCostUsd === null ? 1n : 0n);
      groups.set(key.join("|"), g);
    }
    return { groups: [...groups.values()], nano };
  }
  async function logRollups(nano: (usd: string) => bigint) {
    const { rows } = await db.pool.query<Record<string, string>>(
      `select to_char(day, 'YYYY-MM-DD') as day, user_id::text, public_model, route, requests::text, errors::text, estimated::text, input_tokens::text,
         output_tokens::text, cached_tokens::text, quota_charged::text, cost_usd::text, upstream_cost_usd::text, upstream_unpriced::text
       from request_log_rollups`,
    );
    return rows.map((r) => {
      const out: Record<string, bigint | string> = {};
      for (const [k, v] of Object.entries(r))
        out[k] = ["day", "user_id", "public_model", "route"].includes(k) ? v : k.endsWith("_usd") ? nano(v) : BigInt(v);
      return out;
    });
  }

  const ids = (s: Snapshot, table: "quota_holds" | "quota_leases" | "request_logs") =>
    s[table].map((row) => String(row[table === "request_logs" ? "request_id" : "id"])).sort();
  const without = (all: string[], removed: string[]) => all.filter((id) => !removed.includes(id)).sort();

  let before: Snapshot;
  let afterOneRowBatches: Snapshot;
  beforeAll(async () => {
    await ledgerHistory();
    await logHistory();
    before = await snapshot(db.pool);
  });

  it("reconciles every account, and the reconciliation sees a broken one", async () => {
    expect(await reconcileLedger(db.pool)).toEqual([]);
    const { rows } = await db.pool.query<{ id: string }>(
      "update quota_accounts set debits_posted = debits_posted + 1 where id = (select min(id) from quota_accounts) returning id::text",
    );
    expect(await reconcileLedger(db.pool)).toMatchObject([
      { accountId: rows[0]!.id, posted: { account: expect.any(BigInt), rows: expect.any(BigInt) } },
    ]);
    await db.pool.query("update quota_accounts set debits_posted = debits_posted - 1 where id = $1", [rows[0]!.id]);
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("deletes exactly what is past its retention, rolled up, and every account still reconciles", async () => {
    // One row per statement: every rollup row with more than one source row is summed across statements.
    const ledgerRun = await pruneLedger(db.pool, LEDGER_DAYS, 1);
    const logRun = await pruneRequestLogs(db.pool, LOG_DAYS, 1);
    const after = await snapshot(db.pool);
    afterOneRowBatches = after;

    // Every resolved hold older than the cutoff went, and nothing else: no hold lost to a lease's cascade.
    const cutoff = Date.parse(ledgerRun.cutoff);
    const goneHolds = before.quota_holds.filter((h) => h.status !== "pending" && Date.parse(String(h.resolved_at)) < cutoff);
    const keptHoldIds = without(
      ids(before, "quota_holds"),
      goneHolds.map((h) => String(h.id)),
    );
    expect(ids(after, "quota_holds")).toEqual(keptHoldIds);
    expect(goneHolds.map((h) => String(h.id)).sort()).toEqual([...gone.holds].sort());
    for (const id of kept.holds) expect(keptHoldIds).toContain(id);
    // Ended leases older than the cutoff went unless a kept hold refers to them; pending ones stay.
    const goneLeases = before.quota_leases.filter(
      (l) => l.status !== "pending" && Date.parse(String(l.resolved_at)) < cutoff && !after.quota_holds.some((h) => h.lease_id === l.id),
    );
    expect(ids(after, "quota_leases")).toEqual(
      without(
        ids(before, "quota_leases"),
        goneLeases.map((l) => String(l.id)),
      ),
    );
    expect(goneLeases.map((l) => String(l.id)).sort()).toEqual([...gone.leases].sort());
    for (const id of kept.leases) expect(ids(after, "quota_leases")).toContain(id);
    expect(ledgerRun).toMatchObject({ holds: gone.holds.length, leases: gone.leases.length });

    // The rollup per account is exactly what went: how many holds, and the posted charges.
    const expectedRollups = new Map<string, { holds: number; charged: number }>();
    for (const h of goneHolds) {
      const sum = expectedRollups.get(String(h.account_id)) ?? { holds: 0, charged: 0 };
      expectedRollups.set(String(h.account_id), {
        holds: sum.holds + 1,
        charged: sum.charged + (h.status === "posted" ? Number(h.charged) : 0),
      });
    }
    const rollups = new Map(
      after.quota_hold_rollups.map((r) => [String(r.account_id), { holds: Number(r.holds), charged: Number(r.charged) }]),
    );
    expect(rollups).toEqual(expectedRollups);
    // Accounts, restorations and credits are kept as they were.
    for (const table of ["quota_accounts", "quota_restorations", "reseller_credits"] as const) expect(after[table]).toEqual(before[table]);
    expect(await reconcileLedger(db.pool)).toEqual([]);

    // The request log: rows older than 90 days went, summed exactly into the daily rollups.
    const { groups, nano } = expectedLogRollups(logRun.cutoff);
    const oldRows = loggedRows.filter((r) => r.createdAt.getTime() < Date.parse(logRun.cutoff));
    expect(oldRows).toHaveLength(7);
    expect(logRun.rows).toBe(7);
    expect(ids(after, "request_logs")).toEqual(
      without(
        ids(before, "request_logs"),
        oldRows.map((r) => r.requestId),
      ),
    );
    const stored = await logRollups(nano);
    const byKey = (g: Record<string, unknown>) => `${String(g.day)}|${String(g.user_id)}|${String(g.public_model)}|${String(g.route)}`;
    expect(stored.sort((x, y) => byKey(x).localeCompare(byKey(y)))).toEqual(groups.sort((x, y) => byKey(x).localeCompare(byKey(y))));
    // The two long names are one group, and the totals are what was deleted.
    expect(stored.filter((g) => String(g.public_model).startsWith("x"))).toMatchObject([
      { public_model: `x${"y".repeat(127)}`, requests: 2n, errors: 2n },
    ]);
    const total = (k: string) => stored.reduce((n, g) => n + (g[k] as bigint), 0n);
    expect([total("requests"), total("quota_charged"), total("output_tokens"), total("cost_usd")]).toEqual([
      7n,
      1_000_457n,
      1_000_250n,
      12_500_042_000n,
    ]);
  });

  it("running it again changes nothing", async () => {
    expect(await pruneLedger(db.pool, LEDGER_DAYS, 1)).toMatchObject({ holds: 0, leases: 0 });
    expect(await pruneRequestLogs(db.pool, LOG_DAYS, 1)).toMatchObject({ rows: 0 });
    expect(await snapshot(db.pool)).toEqual(afterOneRowBatches);
  });

  it("deletes the same in one batch of 5000 rows as in batches of one", async () => {
    await restore(db.pool, before);
    expect(await snapshot(db.pool)).toEqual(before);
    expect(await pruneLedger(db.pool, LEDGER_DAYS, 5000)).toMatchObject({ holds: gone.holds.length, leases: gone.leases.length });
    expect(await pruneRequestLogs(db.pool, LOG_DAYS, 5000)).toMatchObject({ rows: 7 });
    expect(await snapshot(db.pool)).toEqual(afterOneRowBatches);
  });

  it("a durable hold expired longer ago than the retention can no longer be posted; a recent one can", async () => {
    await expect(ledger.postDurable(expiredOld, 10n)).rejects.toBeInstanceOf(HoldNotFoundError);
    await expect(ledger.postDurable(expiredRecent, 10n)).resolves.toMatchObject({ status: "posted", charged: 10n });
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("two runs at once beside serving traffic split the work, never deadlock, and the ledger reconciles", async () => {
    const users = await Promise.all(Array.from({ length: 4 }, () => fixture.newUser()));
    const other = (await fixture.process()).ledger;
    const old = await Promise.all(
      users.flatMap((u) => Array.from({ length: 15 }, (_, i) => request(i % 2 ? other : ledger, daily(u, 10n), i % 3 ? 7n : null))),
    );
    await Promise.all([ledger.flush(), other.flush()]);
    await age("quota_holds", "resolved_at", old, 40);
    const oldLogs = users.flatMap((u) => Array.from({ length: 15 }, (_, i) => logRow(u, 91 + (i % 3))));
    await db.pool.query(INSERT_ROWS, [`[${oldLogs.map((row) => encodeRow(row)!).join(",")}]`]);
    const traffic = users.flatMap((u) => Array.from({ length: 10 }, (_, i) => request(i % 2 ? other : ledger, daily(u, 10n), 5n)));
    const [first, second] = await Promise.all([pruneLedger(db.pool, LEDGER_DAYS, 2), pruneLedger(db.pool, LEDGER_DAYS, 2), ...traffic]);
    const [logs1, logs2] = await Promise.all([pruneRequestLogs(db.pool, LOG_DAYS, 2), pruneRequestLogs(db.pool, LOG_DAYS, 2)]);
    await Promise.all([ledger.flush(), other.flush()]);
    expect(first.holds + second.holds).toBe(old.length);
    expect(logs1.rows + logs2.rows).toBe(oldLogs.length);
    expect((await db.pool.query("select count(*)::int as n from quota_holds where id = any($1::uuid[])", [old])).rows[0].n).toBe(0);
    const rolled = await db.pool.query<{ requests: string }>(
      "select sum(requests)::text as requests from request_log_rollups where user_id = any($1::uuid[])",
      [users],
    );
    expect(rolled.rows[0]!.requests).toBe(String(oldLogs.length));
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("runs as the ledger_retention task with the configured days, logging its counts; 0 keeps for ever", async () => {
    const run = async (retention: ConfigInput["retention"]) => {
      const services = await createServices({
        config: testConfig({ retention }),
        pool: db.pool,
        logger: createLogger("silent"),
        env: {},
        serving: false,
      });
      const lines: string[] = [];
      const logger = new Logger(
        () => (level, message) => void (level === "info" && message.startsWith("retention") && lines.push(message)),
      );
      const tasks = taskList({
        sessions: services.auth.sessions,
        ledger,
        pool: db.pool,
        retention: services.config.retention,
        partitionsAheadDays: services.config.analytics.partitions_ahead_days,
        transfers: services.transfers,
      });
      await quickAddJob({ pgPool: db.pool }, "ledger_retention", {});
      await runOnce({ pgPool: db.pool, taskList: tasks, logger });
      // Completion is not awaited by runOnce: poll for the job's deletion, which proves it did not fail.
      const jobsLeft = async () => (await db.pool.query("select count(*)::int as n from graphile_worker.jobs")).rows[0].n;
      await expect.poll(jobsLeft).toBe(0);
      await services.close();
      return lines;
    };
    const user = await fixture.newUser();
    const old = [await request(ledger, daily(user, 100n), 60n), await request(ledger, daily(user, 100n), null)];
    await ledger.flush();
    await age("quota_holds", "resolved_at", old, 40);
    const oldLog = logRow(randomUUID(), 91);
    await db.pool.query(INSERT_ROWS, [`[${encodeRow(oldLog)}]`]);
    const count = async () =>
      (
        await db.pool.query<{ n: number }>(
          "select (select count(*) from quota_holds where id = any($1::uuid[])) + (select count(*) from request_logs where request_id = $2) as n",
          [old, oldLog.requestId],
        )
      ).rows[0]!.n;

    expect(await run({ ledger_days: 0, request_log_days: 0 })).toEqual([
      "retention deleted no ledger rows (ledger_days 0: kept for ever); no request-log rows (request_log_days 0: kept for ever)",
    ]);
    expect(Number(await count())).toBe(3);
    const lines = await run({ batch_rows: 1 });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^retention deleted 2 resolved holds \(rolled up\) and 0 ended leases before \S+Z; 1 request-log rows \(rolled up, 0 day partitions dropped, 0 left for the next run\) before \S+Z$/,
    );
    expect(Number(await count())).toBe(0);
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });
});
