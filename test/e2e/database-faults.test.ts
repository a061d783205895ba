import { writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { parseUsd } from "../../src/billing/usd.js";
import { reconcileLedger } from "../../src/quota/index.js";
import {
  anyReserved,
  readAccounts,
  type GatewayCluster,
  startLoad,
  startSampler,
  withPool,
  type Outcome,
} from "../helpers/crash-cluster.js";
import { useClusterBench } from "../helpers/cluster-bench.js";
import { evaluationsUncharged, readReseller, resellerBalance, startEvaluationLoad } from "../helpers/evaluation-load.js";
import type { TestDatabase } from "../helpers/db.js";
import { startPgFaultProxy, type PgFaultProxy } from "../helpers/pg-fault-proxy.js";

// An operator's bad day (docs/architecture.md, "Database faults"): a real `gateway serve` process (FAULTED)
// reaches PostgreSQL through a TCP proxy that cuts, refuses and stalls; a second one (DIRECT) uses the same
// database directly throughout, and a sampler reads the ledger on its own connection. Eight clients (half of
// them streaming) send chat completions for at least nine seconds while the fault happens. Afterwards: every
// answer a client received in full is charged exactly once, with the charge it named, and has exactly one
// request-log row; the ledger's used equals the log; nothing stays reserved past the documented bound; the
// faulted process answered only 200 or a 503 envelope during the fault (or, for a stream that had begun, the
// in-band database_unavailable error) and only 200 outside it, the direct one only 200, and no connection was
// dropped without an answer. A SIGKILL during an outage loses no complete answer's charge either: none reached
// a client before it was committed (docs/billing.md, "Settlement"). In every scenario a reseller's evaluations,
// paid in USD, go to both processes too, under the same rules: every one received is posted once at the price it
// named, and the USD balance agrees with the request log.

const FAULTED = 0;
const DIRECT = 1;
const USERS = 2;
const CLIENTS = 8;
/** Clients 0-5 use the faulted process, 6-7 the direct one; odd clients stream. */
const route = (client: number) => (client < 6 ? FAULTED : DIRECT);
/** The reseller's two clients (numbered after the chat clients): one on each process. */
const evaluationRoute = (client: number) => (client % 2 === 0 ? FAULTED : DIRECT);
const CREDIT_USD = "5";
const streams = (client: number) => client % 2 === 1;
const CHUNK_DELAY_MS = 25;
const MAX_TOKENS = 200;
/** Far above what a run spends: the only refusals allowed are the database's. */
const DAILY_TOKENS = 50_000_000;
/** database.request_timeout_ms: how long a request that needs the database waits for it. */
const REQUEST_TIMEOUT_MS = 2_000;
/**
 * After a fault ends, a request that started before then may still get its 503 (its deadline ran out first), and
 * one that starts right after waits for the retry in progress: at most 250 ms for a reservation (src/quota/lease-sync-loop.ts,
 * pause()) or 200 ms for a key lookup (src/db/faults.ts). Requests started later than this after the end get 200.
 */
const RECOVERY_MS = 1_000;
/**
 * docs/architecture.md, "Database faults": reserved units return within lease_idle_ms (1 s here) plus one sync
 * backoff once the load stops and the database answers; a killed process's within instance_timeout_seconds
 * (3 s here) plus one expiry sweep (1 s). With room for a loaded CI machine.
 */
const RESERVED_BOUND_MS = 15_000;

interface Window {
  start: number;
  end: number;
}

interface Timeline {
  /** Waits until `ms` after the load started. */
  at(ms: number): Promise<void>;
  /** Marks a fault from now until the returned function is called. */
  begin(): () => void;
  cluster: GatewayCluster;
  proxy: PgFaultProxy;
}

describe("gateway serve through database faults", () => {
  const bench = useClusterBench("gateway-e2e-dbfaults-");

  function writeConfig(name: string, requestTimeoutMs: number): string {
    return bench.writeConfig(name, {
      server: { host: "127.0.0.1", drain_timeout_ms: 3_000 },
      database: { pool_size: 8, request_timeout_ms: requestTimeoutMs },
      logging: { level: "info" },
      providers: {
        mock: { protocol: "openai", base_url: bench.upstream.baseUrl({ "x-mock-chunk-delay-ms": CHUNK_DELAY_MS }), api_key: "mock-key" },
        judge: { protocol: "systemone", base_url: bench.upstream.baseUrl({}).replace(/\/v1$/, ""), api_key: "mock-key" },
      },
      models: {
        "faults-chat": { kind: "chat", upstream: "mock-gpt-small", targets: ["mock"] },
        "faults-judge": { kind: "systemone", upstream: "1.13.0", targets: ["judge"], reseller_price: { input_usd_per_million: 0.5 } },
      },
      plans: { faults: { daily_tokens: DAILY_TOKENS, context_limit: 128_000 } },
      default_plan: "faults",
      quota: { heartbeat_seconds: 1, instance_timeout_seconds: 3, expiry_sweep_seconds: 1, lease_idle_ms: 1_000 },
    });
  }
  const cli = bench.cli;

  interface ScenarioOptions {
    name: string;
    /** The load runs at least this long. */
    loadMs: number;
    fault(t: Timeline): Promise<void>;
    /** The faulted process is SIGKILLed (generation 0) and restarted (generation 1). */
    kills?: boolean;
    /** database.request_timeout_ms of this scenario (REQUEST_TIMEOUT_MS unless told). */
    requestTimeoutMs?: number;
    /** A reseller's evaluations run beside the chat load. */
    reseller?: boolean;
  }

  async function scenario(opts: ScenarioOptions) {
    const db = await bench.database();
    const proxy = await startPgFaultProxy(db.url);
    bench.afterProcesses(() => proxy.close());
    const configFile = writeConfig(opts.name, opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS);
    const emails = Array.from({ length: USERS }, (_, i) => `faults-${opts.name}-${i}@example.test`);
    const [keys, reseller] = await Promise.all([
      (async () => {
        for (const email of emails) await cli(["users", "create", "--email", email, "--password", "correct horse"], configFile, db);
        return Promise.all(emails.map((email) => cli(["keys", "create", "--user", email], configFile, db)));
      })(),
      opts.reseller ? createReseller(configFile, db, `faults-${opts.name}-reseller@example.test`) : undefined,
    ]);

    const cluster = bench.cluster({ configFile, databaseUrl: db.url, worker: true });
    await cluster.start(FAULTED, 0, proxy.url);
    await cluster.start(DIRECT);

    const sampler = bench.running(startSampler(db.url, 100));
    const load = bench.running(
      startLoad({
        cluster,
        keys: keys.map((k) => k.key!),
        model: "faults-chat",
        clients: CLIENTS,
        streams,
        maxTokens: MAX_TOKENS,
        pauseMs: 5,
        route,
      }),
    );
    const evaluations =
      reseller &&
      bench.running(
        startEvaluationLoad({
          cluster,
          key: reseller.key,
          model: "faults-judge",
          clients: 2,
          pauseMs: 20,
          route: evaluationRoute,
          firstClient: CLIENTS,
        }),
      );
    const t0 = performance.now();
    const windows: Window[] = [];
    const timeline: Timeline = {
      at: (ms) => sleep(Math.max(0, t0 + ms - performance.now())),
      begin() {
        const window = { start: performance.now(), end: Infinity };
        windows.push(window);
        return () => void (window.end = performance.now());
      },
      cluster,
      proxy,
    };
    await opts.fault(timeline);
    await timeline.at(opts.loadMs);
    await Promise.all([load.stop(), evaluations?.stop()]);
    const loadEnded = performance.now();

    while ((await withPool(db.url, anyReserved)) && performance.now() - loadEnded < RESERVED_BOUND_MS) await sleep(100);
    const accounts = await withPool(db.url, readAccounts);
    const reservedZeroAfterMs = Math.round(performance.now() - loadEnded);
    const sampled = await sampler.stop();
    const { holds, logs, resellerRows } = await withPool(db.url, async (pool) => ({
      holds: (
        await pool.query<{ request_id: string; status: string; charged: string | null; user_id: string }>(
          "select h.request_id, h.status, h.charged::text, a.user_id::text from quota_holds h join quota_accounts a on a.id = h.account_id",
        )
      ).rows,
      logs: (
        await pool.query<{ request_id: string; user_id: string; status: number; quota_charged: string }>(
          "select request_id, user_id::text, status, quota_charged::text from request_logs",
        )
      ).rows,
      resellerRows: reseller && (await readReseller(pool, reseller.id)),
    }));
    const exited = cluster.exitedOnTheirOwn();
    const stopped = await cluster.stop();
    const keep = process.env.DATABASE_FAULTS_LOGS;
    if (keep) for (const p of cluster.all) writeFileSync(path.join(keep, `${opts.name}-${p.index}.${p.generation}.log`), p.serve.stdout());

    // ---- what happened, printed whatever the outcome ----
    const outcomes = [...load.outcomes, ...(evaluations?.outcomes ?? [])];
    const since = (t: number) => Math.round(t - t0);
    const killedAt = cluster.all.find((p) => p.killedAt !== undefined)?.killedAt;
    const restarted = cluster.all.find((p) => p.index === FAULTED && p.generation === 1);
    /** A request overlapping a fault, or started within RECOVERY_MS of its end. */
    const duringFault = (o: Outcome) => windows.some((w) => o.endedAt >= w.start && o.startedAt <= w.end + RECOVERY_MS);
    /** Requests the SIGKILL took: in flight on the victim at the kill. */
    const killed = (o: Outcome) => killedAt !== undefined && o.process === FAULTED && o.generation === 0 && o.endedAt >= killedAt;
    const count = (list: Outcome[]) => {
      const counts: Record<string, number> = {};
      for (const o of list) {
        const key = `${o.process === FAULTED ? "faulted" : "direct"} ${o.kind} ${o.status}${o.errorCode ? ` ${o.errorCode}` : ""}${o.status === 200 && !o.completed ? " incomplete" : ""}`;
        counts[key] = (counts[key] ?? 0) + 1;
      }
      return counts;
    };
    const logById = new Map(logs.map((l) => [l.request_id, l]));
    const holdsById = new Map<string, typeof holds>();
    for (const h of holds) holdsById.set(h.request_id, [...(holdsById.get(h.request_id) ?? []), h]);
    const received = outcomes.filter((o) => o.completed);
    const unaccounted = received.filter((o) => {
      if (o.kind === "evaluation") return false; // evaluationsUncharged, below
      const log = logById.get(o.requestId!);
      const hold = holdsById.get(o.requestId!);
      return (
        !log ||
        log.status !== 200 ||
        hold?.length !== 1 ||
        hold[0]!.status !== "posted" ||
        hold[0]!.charged !== String(o.usageTotal) ||
        o.charge !== hold[0]!.charged
      );
    });
    const faultedLines = cluster.logSummary(30).filter((l) => l.process.startsWith(`${FAULTED}.`) && /DATABASE_/.test(l.msg));
    const report = {
      requests: outcomes.length,
      outcomes: count(outcomes),
      duringFault: count(outcomes.filter(duringFault)),
      windows: windows.map((w) => [since(w.start), since(w.end)]),
      kill: killedAt === undefined ? null : { atMs: since(killedAt), restarted: restarted !== undefined, lost: unaccounted.length },
      proxy: proxy.stats(),
      holds: holds.length,
      logRows: logs.length,
      reseller: resellerRows && {
        ...resellerBalance(resellerRows, parseUsd(CREDIT_USD)!),
        uncharged: evaluationsUncharged(outcomes, resellerRows).length,
      },
      reservedZeroAfterMs,
      sampler: {
        samples: sampled.samples,
        failures: sampled.failures,
        violations: sampled.violations.length,
        unreconciled: sampled.unreconciled.length,
      },
      databaseLines: faultedLines,
      warnings: cluster.logSummary(40).filter((l) => !/DATABASE_/.test(l.msg)),
      exited,
      stopped,
    };
    console.log(
      `database faults (${opts.name}):\n${Object.entries(report)
        .map(([k, v]) => `  ${k}: ${JSON.stringify(v, (_, x: unknown) => (typeof x === "bigint" ? String(x) : x))}`)
        .join("\n")}`,
    );

    // ---- the proof ----
    // No process ended on its own (the faulted one lived until its SIGKILL, if any), whatever the database did.
    expect(exited).toEqual([]);
    // Real load on both processes, streams and JSON, before, during and after the fault.
    expect(windows.length).toBeGreaterThan(0);
    expect(windows.every((w) => w.end !== Infinity)).toBe(true);
    for (const p of [FAULTED, DIRECT]) {
      for (const kind of ["json", "stream"] as const)
        expect(received.filter((o) => o.process === p && o.kind === kind).length).toBeGreaterThan(5);
    }
    expect(received.filter((o) => o.process === FAULTED && o.startedAt > windows.at(-1)!.end).length).toBeGreaterThan(5);

    // Answers: the direct process only 200, complete; the faulted one a 503 envelope only during a fault, 200
    // otherwise; no connection dropped without an answer (but what the SIGKILL took, and the restart's gap).
    const restartGap = (o: Outcome) => killedAt !== undefined && o.process === FAULTED && o.generation === 0 && o.startedAt >= killedAt;
    const wrong = outcomes.filter((o) => {
      if (killed(o) || restartGap(o)) return false;
      // A stream that had begun, whose charge could not be committed in time, ends with the in-band error.
      const inBand = o.kind === "stream" && o.status === 200 && o.errorCode === "database_unavailable";
      if (o.status === 200 && !inBand) return !o.completed;
      const envelope503 = o.status === 503 && o.errorCode === "database_unavailable" && o.retryAfter !== null;
      return !((envelope503 || inBand) && o.process === FAULTED && duringFault(o));
    });
    expect(wrong).toEqual([]);

    // The ledger: never above the allowance, always reconciled with its rows and the request log; used equals
    // the log's sum, user by user; no request charged twice; every 200 charged once with the usage shown.
    expect(sampled.samples).toBeGreaterThan(20);
    expect(sampled.violations).toEqual([]);
    expect(sampled.unreconciled).toEqual([]);
    expect(accounts).toHaveLength(USERS);
    for (const account of accounts) {
      const logged = logs.filter((l) => l.user_id === account.userId).reduce((sum, l) => sum + BigInt(l.quota_charged), 0n);
      expect({ user: account.userId, used: account.posted }).toEqual({ user: account.userId, used: logged });
    }
    expect([...holdsById].filter(([, list]) => list.length > 1)).toEqual([]);
    expect(new Set(logs.map((l) => l.request_id)).size).toBe(logs.length);
    expect(await withPool(db.url, reconcileLedger)).toEqual([]);
    // Zero, the kill included: no complete answer reached a client before its charge was committed.
    expect(unaccounted).toEqual([]);
    // The reseller's evaluations: every one received (the faulted process's and, killed, its victim's) posted once
    // on the USD balance at the price it named; the balance is what was credited less the log's costs.
    if (reseller) {
      for (const p of [FAULTED, DIRECT])
        expect(received.filter((o) => o.process === p && o.kind === "evaluation").length).toBeGreaterThan(3);
      expect(evaluationsUncharged(outcomes, resellerRows!)).toEqual([]);
      const balance = resellerBalance(resellerRows!, parseUsd(CREDIT_USD)!);
      expect(balance).toEqual({
        credits: balance.credited,
        credited: parseUsd(CREDIT_USD)!,
        posted: balance.logged,
        holdsPosted: balance.logged,
        logged: balance.logged,
        pending: 0n,
        mismatches: [],
      });
    }
    // And nothing a client was refused (503, or a stream's in-band error) was charged.
    const refusedButCharged = outcomes.filter(
      (o) =>
        o.errorCode === "database_unavailable" &&
        o.requestId !== null &&
        (holdsById.get(o.requestId) ?? []).some((h) => h.status === "posted"),
    );
    expect(refusedButCharged).toEqual([]);

    // Nothing stays reserved.
    expect(accounts.map((a) => a.pending)).toEqual(accounts.map(() => 0n));
    expect(stopped.map((s) => s.exitCode)).toEqual(stopped.map(() => 0));
    return { report, faultedLines, outcomes, windows };
  }

  /** A reseller with a credited balance and a reseller key, by the admin CLI. */
  async function createReseller(configFile: string, db: TestDatabase, email: string) {
    const { id } = await cli(["users", "create", "--email", email, "--password", "correct horse"], configFile, db);
    const { key } = await cli(["keys", "create", "--user", email, "--kind", "reseller"], configFile, db);
    await cli(["reseller", "credit", "--user", email, "--usd", CREDIT_USD], configFile, db);
    return { id: id!, key: key! };
  }

  /** The faulted process logged each outage once: one warning when it began, one line when it ended. */
  function expectOneLinePerOutage(lines: { msg: string; count: number }[], outages: number) {
    const warned = lines.filter((l) => l.msg.startsWith("DATABASE_UNREACHABLE")).reduce((n, l) => n + l.count, 0);
    const back = lines.filter((l) => l.msg.startsWith("DATABASE_BACK")).reduce((n, l) => n + l.count, 0);
    expect({ warned, back }).toEqual({ warned: outages, back: outages });
  }

  it("a 3 s outage: every connection dropped, new ones refused", async () => {
    const { faultedLines, outcomes, windows } = await scenario({
      name: "outage-3s",
      reseller: true,
      loadMs: 9_000,
      async fault(t) {
        await t.at(2_500);
        const end = t.begin();
        t.proxy.down();
        await t.at(5_500);
        t.proxy.up();
        end();
      },
    });
    expectOneLinePerOutage(faultedLines, 1);
    // An answer cannot be delivered while its charge cannot be committed: the faulted process answered nothing
    // complete that it started and finished within the outage.
    const [outage] = windows;
    expect(outcomes.filter((o) => o.process === FAULTED && o.completed && o.startedAt > outage!.start && o.endedAt < outage!.end)).toEqual(
      [],
    );
  }, 120_000);

  // Once (2026-11-29) the reseller's balance ended with 189,000 nano-USD still pending after both processes had
  // stopped: a lease closed while its sync was sent again (docs/architecture.md, "Database faults").
  it("connections cut every 400 ms for 6 s with the database up: no client sees an error", { timeout: 120_000 }, async () => {
    const { outcomes } = await scenario({
      name: "cuts",
      reseller: true,
      loadMs: 10_000,
      // A request that needs the database can lose two or three attempts in a row to cuts 400 ms apart when the
      // machine is loaded (connecting again takes its share); 2 s left 2 in 790 requests a 503 once in CI. The
      // claim is that cuts alone are retried to success, given a deadline several retries fit in.
      requestTimeoutMs: 5_000,
      async fault(t) {
        await t.at(2_000);
        const end = t.begin();
        await t.proxy.cutEvery(400, 6_000);
        end();
      },
    });
    expect(outcomes.filter((o) => o.status !== 200)).toEqual([]);
  });

  it("a 5 s stall: connections open, no byte moves", async () => {
    const { faultedLines } = await scenario({
      name: "stall",
      reseller: true,
      loadMs: 10_000,
      async fault(t) {
        await t.at(2_000);
        const end = t.begin();
        t.proxy.stall();
        await t.at(7_000);
        t.proxy.resume();
        end();
      },
    });
    expectOneLinePerOutage(faultedLines, 1);
  }, 120_000);

  it("SIGKILL of the faulted process during an outage, then a restart that waits for the database", async () => {
    await scenario({
      name: "kill",
      reseller: true,
      loadMs: 12_000,
      kills: true,
      async fault(t) {
        await t.at(2_000);
        const end = t.begin();
        t.proxy.down();
        await t.at(4_000);
        const victim = await t.cluster.kill(FAULTED);
        // The restart finds the database away and waits for it (database.startup_timeout_seconds).
        const restart = t.cluster.start(FAULTED, victim.port, t.proxy.url);
        await t.at(7_000);
        t.proxy.up();
        end();
        await restart;
      },
    });
  }, 120_000);

  it("a 30 s outage", async () => {
    const { faultedLines } = await scenario({
      name: "outage-30s",
      reseller: true,
      loadMs: 36_000,
      async fault(t) {
        await t.at(2_000);
        const end = t.begin();
        t.proxy.down();
        await t.at(32_000);
        t.proxy.up();
        end();
      },
    });
    expectOneLinePerOutage(faultedLines, 1);
  }, 180_000);
});
