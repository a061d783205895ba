import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { chatQuota, type ChatRates } from "../../src/billing/chat-quota.js";
import type { ConfigInput } from "../../src/config/schema.js";
import { createPool, type Pool } from "../../src/db/pool.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { reconcileLedger } from "../../src/quota/index.js";
import { startChatLoad, type ChatOutcome } from "../helpers/chat-load.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { readAccounts, startSampler } from "../helpers/ledger-sampler.js";
import { startPgFaultProxy, type PgFaultProxy } from "../helpers/pg-fault-proxy.js";
import {
  cancelLoop,
  failuresAt,
  injectAtPool,
  lockTimeoutFor,
  observerPool,
  readOnlyFor,
  stallFor,
  statementTimeoutFor,
  writesData,
  type FaultStats,
  type SqlFault,
} from "../helpers/sql-faults.js";

// The ledger through the database's SQL-level faults (docs/architecture.md, "Database faults"; docs/billing.md,
// "Escrow", "Crashes and every timeout"): two gateways in-process on one database, two users on small daily
// allowances (one runs out), eight clients (half JSON through the OpenAI SDK, half streams through fetch) on both
// gateways for about five seconds, and in the middle one fault for two seconds, made for real
// (test/helpers/sql-faults.ts). Afterwards: every answer a client received in full is charged exactly once with the
// usage it showed, and was charged before the client had it (docs/architecture.md, "Rules"); the clients saw only 200, 503
// database_unavailable with Retry-After (in-band for a stream that had begun), or 429, and none of those refusals
// was charged; the ledger equals the request log and reconciles; nothing stays reserved once the leases idled out;
// and no sample saw more held than the allowance.

const CLIENTS = 8;
const LEAD_MS = 1_500;
const FAULT_MS = 2_000;
const TAIL_MS = 1_500;
const MAX_TOKENS = 16;
/** Streams take a few hundred ms, so that some are on their way when the fault begins and ends. */
const CHUNK_DELAY_MS = 10;
const PAUSE_MS = 20;
const QUERY_TIMEOUT_MS = 1_000;
const LEASE_IDLE_MS = 300;
/** A client's answer slower than this is a hang. */
const HANG_MS = 20_000;
/** Leases idle out within lease_idle_ms, a sweep (1 s) and a retry; with room for a loaded machine. */
const RESERVED_BOUND_MS = 20_000;
const RATES: ChatRates = { tokenMultiplier: 1.5, completionRatio: 2, cachedRatio: 1, groupMultiplier: 1 };
/**
 * A run spends about 10,000 to 20,000 units per user (50 to 70 a request). The first user's day is a few times
 * that; the second's runs out around the fault, so that the two gateways' leases compete for its last units while
 * syncs fail, and its later requests are refused 429.
 */
const PLANS = { small: 60_000, tight: 6_000 };

/** Clients: user = client % 2, gateway = bit 1, streaming = bit 2, so every user meets every gateway and kind. */
const gatewayOf = (client: number) => (client >> 1) % 2;
const streams = (client: number) => (client >> 2) % 2 === 1;

interface Scenario {
  db: TestDatabase;
  gateways: TestGateway[];
  pools: Pool[];
  users: { id: string; key: string }[];
  observer: Pool;
  /** The TCP proxy between gateway 0 and the database, when it has one. */
  proxy?: PgFaultProxy;
}

let mock: MockUpstream;
let upstream: FaultProxy;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  mock = await startMockUpstream();
  upstream = await startFaultProxy(mock.url);
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});
afterAll(async () => {
  await upstream?.close();
  await mock?.close();
});

const config: Partial<ConfigInput> = {
  providers: { mock: { protocol: "openai", base_url: "" } },
  models: {
    chat: {
      kind: "chat",
      upstream: "mock-gpt-small",
      targets: ["mock"],
      token_multiplier: RATES.tokenMultiplier,
      completion_ratio: RATES.completionRatio,
    },
  },
  plans: {
    small: { daily_tokens: PLANS.small, context_limit: 100_000 },
    tight: { daily_tokens: PLANS.tight, context_limit: 100_000 },
  },
  default_plan: "small",
  database: { query_timeout_ms: QUERY_TIMEOUT_MS },
  quota: { lease_idle_ms: LEASE_IDLE_MS, shutdown_grace_seconds: 5 },
};

/** Two gateways on one new database, each with a pool as `gateway serve` opens it; gateway 0's through a TCP proxy if asked. */
async function scenario(opts: { proxy?: boolean } = {}): Promise<Scenario> {
  const db = await createTestDatabase();
  cleanups.push(() => db.drop());
  // One connection per client, each checking its answers' charges as they come.
  const observer = observerPool(db, CLIENTS);
  cleanups.push(() => observer.end());
  const proxy = opts.proxy ? await startPgFaultProxy(db.url) : undefined;
  if (proxy) cleanups.push(() => proxy.close());
  const roads = [proxy?.url ?? db.url, db.url];
  const gateways: TestGateway[] = [];
  const pools: Pool[] = [];
  for (const url of roads) {
    const pool = createPool(url, 10, () => {}, { connectTimeoutMs: 2_000, queryTimeoutMs: QUERY_TIMEOUT_MS });
    cleanups.push(() => pool.end());
    const gw = await startTestGateway({
      db,
      pool,
      config: {
        ...config,
        providers: { mock: { protocol: "openai", base_url: upstream.baseUrl({ "x-mock-chunk-delay-ms": CHUNK_DELAY_MS }) } },
      },
    });
    cleanups.push(() => gw.close());
    gateways.push(gw);
    pools.push(pool);
  }
  const users = [];
  for (const plan of ["small", "tight"]) {
    const email = `sql-faults-${plan}@example.test`;
    const user = await gateways[0]!.services.auth.users.create({ email, password: "password-123", plan });
    const { key } = await gateways[0]!.services.auth.apiKeys.create({ user: email });
    users.push({ id: user.id, key });
  }
  return { db, gateways, pools, users, observer, proxy };
}

interface Hold {
  request_id: string;
  user_id: string;
  status: string;
  amount: string;
  charged: string | null;
}
interface Log {
  request_id: string;
  user_id: string;
  status: number;
  quota_charged: string;
}

interface FaultPlan {
  fault: () => SqlFault;
  /** The gateways the fault reaches. */
  faulted?: number[];
  /** What some of their statements must have failed with (SQLSTATE or driver message): the fault reached them. */
  seen?: RegExp;
}

/** Runs the load with the fault started LEAD_MS into it, then checks what must hold through it. */
async function underLoad(name: string, s: Scenario, plan: FaultPlan): Promise<FaultStats> {
  const faulted = plan.faulted ?? [0, 1];
  const failures = s.pools.map(failuresAt);
  cleanups.push(async () => failures.forEach((f) => f.stop()));
  // On a connection the faults spare; a table locked by the migration fault makes it wait, but nothing moves an
  // account meanwhile.
  const sampler = startSampler(s.db.url, 50, () => observerPool(s.db, 1));
  const load = startChatLoad({
    urls: s.gateways.map((gw) => gw.url),
    keys: s.users.map((u) => u.key),
    clients: CLIENTS,
    gatewayOf,
    streams,
    model: "chat",
    maxTokens: MAX_TOKENS,
    pauseMs: PAUSE_MS,
    hangMs: HANG_MS,
    chargedNow: async (requestId) =>
      (await s.observer.query("select 1 from quota_holds where request_id = $1 and status = 'posted'", [requestId])).rows.length === 1,
  });
  const t0 = performance.now();
  await sleep(LEAD_MS);
  const started = performance.now();
  const running = plan.fault();
  cleanups.push(() => running.end());
  await running.over;
  const ended = performance.now();
  await sleep(TAIL_MS);
  await load.stop();
  const loadEnded = performance.now();

  // Nothing in flight: once the leases idled out, nothing is reserved.
  let accounts = await readAccounts(s.observer);
  while (accounts.some((a) => a.pending !== 0n) && performance.now() - loadEnded < RESERVED_BOUND_MS) {
    await sleep(100);
    accounts = await readAccounts(s.observer);
  }
  const pendingAfterMs = Math.round(performance.now() - loadEnded);
  for (const gw of s.gateways) await gw.services.requestLog.flush();
  const sampled = await sampler.stop();
  const holds = (
    await s.observer.query<Hold>(
      `select h.request_id, a.user_id::text, h.status, h.amount::text, h.charged::text
       from quota_holds h join quota_accounts a on a.id = h.account_id`,
    )
  ).rows;
  const logs = (await s.observer.query<Log>("select request_id, user_id::text, status, quota_charged::text from request_logs")).rows;
  const mismatches = await reconcileLedger(s.observer);

  const outcomes = load.outcomes;
  const holdsOf = group(holds, (h) => h.request_id);
  const logsOf = group(logs, (l) => l.request_id);
  const received = outcomes.filter((o) => o.completed);
  // Why each answer received in full is not charged exactly once with the usage the client saw.
  const uncharged: Record<string, number> = {};
  for (const o of received) {
    const reason = unchargedReason(o, holdsOf.get(o.requestId!) ?? [], logsOf.get(o.requestId!) ?? []);
    if (reason) uncharged[`${o.kind} ${reason}`] = (uncharged[`${o.kind} ${reason}`] ?? 0) + 1;
  }
  // A stream already answered 200 can only say database_unavailable in-band, instead of its end.
  const allowed = (o: ChatOutcome) =>
    (o.status === 200 && o.completed) ||
    (o.status === 503 && o.errorCode === "database_unavailable" && o.retryAfter !== null && o.retryAfter !== undefined) ||
    (o.status === 200 && o.kind === "stream" && o.errorCode === "database_unavailable") ||
    (o.status === 429 && o.errorCode === "insufficient_quota");
  // Those answers say nothing was charged: then nothing is.
  const chargedAnyway = outcomes.filter(
    (o) =>
      !o.completed &&
      (o.errorCode === "database_unavailable" || o.errorCode === "insufficient_quota") &&
      ((holdsOf.get(o.requestId ?? "") ?? []).some((h) => h.status === "posted" && h.charged !== "0") ||
        (logsOf.get(o.requestId ?? "") ?? []).some((l) => l.quota_charged !== "0")),
  );
  const users = s.users.map((u) => {
    const account = accounts.find((a) => a.userId === u.id);
    const posted = holds.filter((h) => h.user_id === u.id && h.status === "posted");
    const overshoot = posted.reduce((sum, h) => sum + max0(BigInt(h.charged!) - BigInt(h.amount)), 0n);
    const logged = logs.filter((l) => l.user_id === u.id).reduce((sum, l) => sum + BigInt(l.quota_charged), 0n);
    const over = sampled.violations.filter((x) => x.userId === u.id && x.posted + x.pending > x.credits + x.restored + overshoot);
    return { id: u.id, posted: account?.posted ?? 0n, logged, pending: account?.pending ?? 0n, overshoot, over };
  });
  const report = {
    requests: outcomes.length,
    outcomes: counts(
      outcomes,
      (o) =>
        `gw${o.gateway} ${o.kind} ${o.status}${o.errorCode ? ` ${o.errorCode}` : ""}${o.status === 200 && !o.completed ? " incomplete" : ""}`,
    ),
    fault: { at: Math.round(started - t0), ms: Math.round(ended - started), ...running.stats() },
    health: s.gateways.map((gw) => {
      const h = gw.services.health.stats();
      return { outages: h.outages, blips: h.blips };
    }),
    failures: failures.map((f) => f.counts()),
    uncharged,
    chargedAnyway: chargedAnyway.length,
    beforeCharge: `${received.filter((o) => !o.chargedOnReceipt).length} of ${received.length}`,
    ledger: users.map((u) => ({
      posted: String(u.posted),
      logged: String(u.logged),
      pending: String(u.pending),
      overshoot: String(u.overshoot),
    })),
    pendingAfterMs,
    samples: sampled.samples,
    overAllowance: users.reduce((n, u) => n + u.over.length, 0),
    unreconciledSamples: sampled.unreconciled.length,
    mismatches: mismatches.length,
  };
  console.log(
    `ledger through SQL faults (${name}):\n${Object.entries(report)
      .map(([k, v]) => `  ${k}: ${JSON.stringify(v, big)}`)
      .join("\n")}`,
  );

  // Every answer received in full is charged: one log row and one posted hold, with the charge of its usage; and
  // it was charged before the client had it.
  expect.soft(uncharged, "answers received in full but not charged exactly once").toEqual({});
  const early = received.filter((o) => !o.chargedOnReceipt);
  const when = (o: ChatOutcome) => (o.endedAt >= started && o.endedAt <= ended ? "during the fault" : "outside it");
  expect
    .soft(
      counts(early, (o) => `gw${o.gateway} ${o.kind}, ${when(o)}`),
      "answers received in full before their charge was committed",
    )
    .toEqual({});
  expect
    .soft(
      counts(chargedAnyway, (o) => `${o.kind} ${o.status} ${o.errorCode}`),
      "refusals that were charged",
    )
    .toEqual({});
  // No 500, no dropped connection, no stream cut short: 200, or 503 database_unavailable with Retry-After (in-band
  // for a stream that had begun), or 429.
  const wrong = outcomes.filter((o) => !allowed(o));
  expect
    .soft(
      counts(wrong, (o) => `${o.kind} ${o.status} ${o.errorCode ?? o.error ?? ""}`.trim()),
      "answers other than 200, 503, 429",
    )
    .toEqual({});
  const spared = outcomes.filter((o) => !faulted.includes(o.gateway) && o.status === 503);
  expect.soft(spared.length, "503s of a gateway the fault does not reach").toBe(0);
  // The ledger equals the request log, reconciles, and holds nothing once the leases idled out.
  expect
    .soft(
      users.map((u) => u.posted - u.logged),
      "debits_posted - Σ quota_charged, per user",
    )
    .toEqual([0n, 0n]);
  expect.soft(mismatches, "accounts that do not reconcile with their rows").toEqual([]);
  expect
    .soft(
      users.map((u) => u.pending),
      "debits_pending once the leases idled out",
    )
    .toEqual([0n, 0n]);
  expect.soft([...holdsOf].filter(([, list]) => list.length > 1).length, "requests with more than one hold").toBe(0);
  expect.soft([...logsOf].filter(([, list]) => list.length > 1).length, "requests with more than one log row").toBe(0);
  // Never more held than allowed, at any sample; always reconciled with the rows and the log.
  expect
    .soft(
      users.flatMap((u) => u.over.slice(0, 3)),
      "samples above credits + restored + overshoot",
    )
    .toEqual([]);
  expect.soft(sampled.unreconciled.slice(0, 3), "samples that do not reconcile").toEqual([]);

  // And the run proved something: real load on both gateways and both kinds, requests during the fault, and the
  // fault reached the statements of the gateways it is meant for.
  for (const gateway of [0, 1])
    for (const kind of ["json", "stream"] as const)
      expect(received.filter((o) => o.gateway === gateway && o.kind === kind).length, `gw${gateway} ${kind}`).toBeGreaterThan(5);
  expect(outcomes.filter((o) => o.startedAt < ended && o.endedAt > started).length).toBeGreaterThan(CLIENTS);
  expect(sampled.samples).toBeGreaterThan(10);
  // (A cancel only hits a statement that is running: under load a gateway may get none, so any faulted one will do.)
  const seen = faulted.flatMap((gateway) => Object.keys(failures[gateway]!.counts()));
  if (plan.seen) expect(seen, "how the faulted gateways' statements failed").toContainEqual(expect.stringMatching(plan.seen));
  return running.stats();
}

function unchargedReason(o: ChatOutcome, holds: Hold[], logs: Log[]): string | undefined {
  if (logs.length === 0) return "no log row";
  if (holds.length === 0) return "no hold";
  if (logs.length > 1 || holds.length > 1) return "charged more than once";
  const [hold, log] = [holds[0]!, logs[0]!];
  if (log.status !== 200) return `logged ${log.status}`;
  if (hold.status !== "posted") return `hold ${hold.status}`;
  const usage = {
    promptTokens: o.usage!.prompt_tokens,
    completionTokens: o.usage!.completion_tokens,
    cachedTokens: o.usage!.prompt_tokens_details?.cached_tokens ?? 0,
  };
  const expected = String(chatQuota(usage, RATES));
  if (hold.charged !== expected || log.quota_charged !== expected) return "charge differs from the usage shown";
  return undefined;
}

function group<T>(rows: T[], key: (row: T) => string): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const row of rows) map.set(key(row), [...(map.get(key(row)) ?? []), row]);
  return map;
}

function counts<T>(rows: T[], key: (row: T) => string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const row of rows) out[key(row)] = (out[key(row)] ?? 0) + 1;
  return out;
}

const max0 = (n: bigint) => (n > 0n ? n : 0n);
const big = (_: string, v: unknown) => (typeof v === "bigint" ? String(v) : v);

describe("the ledger through SQL-level faults, two gateways on one database", () => {
  it("a failover to a read-only node (25006): sessions terminated, new ones read-only, then the primary is back", async () => {
    const s = await scenario();
    await underLoad("read-only", s, { fault: () => readOnlyFor(s.db, FAULT_MS), seen: /^25006$/ });
  }, 60_000);

  it("a server statement_timeout of 1 ms (57014) on every new session", async () => {
    const s = await scenario();
    await underLoad("statement-timeout", s, { fault: () => statementTimeoutFor(s.db, FAULT_MS), seen: /^57014$/ });
  }, 60_000);

  it("a migration holding request_logs ACCESS EXCLUSIVE while sessions have a lock_timeout (55P03)", async () => {
    const s = await scenario();
    const fault = () => lockTimeoutFor(s.db, FAULT_MS, { table: "request_logs", lockTimeout: "100ms" });
    await underLoad("lock-timeout", s, { fault, seen: /^55P03$/ });
  }, 60_000);

  it("every active statement cancelled by pg_cancel_backend every 5 ms (57014)", async () => {
    const s = await scenario();
    await underLoad("cancel-loop", s, { fault: () => cancelLoop(s.db, 5, FAULT_MS), seen: /^57014$/ });
  }, 60_000);

  it("a stall of one gateway's connections longer than twice database.query_timeout_ms", async () => {
    const s = await scenario({ proxy: true });
    await underLoad("stall", s, { fault: () => stallFor(s.proxy!, 2 * QUERY_TIMEOUT_MS + 500), faulted: [0], seen: /timeout/i });
  }, 60_000);

  it("a full disk (53100) answering every write of one gateway's pool", async () => {
    const s = await scenario();
    const fault = () => injectAtPool(s.pools[0]!, { code: "53100", forMs: FAULT_MS, when: writesData });
    const stats = await underLoad("disk-full", s, { fault, faulted: [0] });
    expect(stats.refused).toBeGreaterThan(0);
  }, 60_000);
});
