import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { reconcileLedger } from "../../src/quota/index.js";
import { useClusterBench } from "../helpers/cluster-bench.js";
import { anyReserved, cutConnections, readAccounts, startLoad, startSampler, withPool, type Outcome } from "../helpers/crash-cluster.js";
import { createMixUsers, enableAutoResets, logInAll, mixConfig, RESET_WEEKLY, resetsRunOut, startMix } from "../helpers/crash-mix.js";
import { mixMismatches, mixReport, NO_MIX_MISMATCHES, readMix, type MixRun } from "../helpers/crash-mix-proof.js";
import { jobsAsShownBy } from "../helpers/video-load.js";

// The ledger under crashes, with real processes (docs/billing.md, "Escrow"): three `gateway serve` processes on
// one database take chat load; one is SIGKILLed with streams in flight and restarted, and twice every database
// connection is cut. Throughout, no account is reserved or used beyond its allowance; afterwards every unit
// comes back, the ledger agrees with the request log request by request, nothing is charged twice, and every
// answer any process gave in full, the killed one's included, is logged and posted with the charge it named: no
// complete answer reaches a client before its charge is committed (docs/billing.md, "Settlement"). What the kill
// can cost is only answers the client never received in full (streams it cut), and those go uncharged.
//
// Beside the chat load, through the same kill and cuts (test/helpers/crash-mix.ts): a reseller's evaluations paid
// in USD (each one received posted once at the price its answer named, the balance reconciled), video jobs
// submitted to the victim just before the kill and to the others (each completed by a survivor, its durable hold
// posted once, one log row), a user whose small day runs out again and again on automatic resets (never more
// used than the week allows), and token transfers among the chat users, some sent to the victim (each ended
// exactly once, its hold and the recipient's restoration equal to what it applied).

const PROCESSES = 3;
const USERS = 3;
const CLIENTS = 8;
/** Clients 0-3 send JSON, 4-7 stream (slowly, so that the kill finds streams in flight). */
const streams = (client: number) => client >= CLIENTS / 2;
/** The mock waits this long before each stream event after the first: a stream lasts about 0.5-2.5 s. */
const CHUNK_DELAY_MS = 70;
/**
 * Every request holds about MAX_TOKENS + 20 units (the completion it may take plus its prompt estimate) and
 * is charged at most ~45 (the mock's prompt count plus 5-30 words); so holds and leases, not charges, press
 * on the allowance, and no charge exceeds its hold (no overshoot).
 */
const MAX_TOKENS = 1000;
/**
 * About 60 holds. A lease asks for about a second of its process's demand on the account, so three processes
 * serving one user at a few requests a second each reserve half of it or more at once (all of it on a fast
 * machine, where some requests are then refused), while the charges of the whole run stay far below it.
 */
const DAILY_TOKENS = 60_000;
/** The load runs this long, and at least RESTARTED_LOAD_MS after the restarted process is up. */
const LOAD_MS = 10_000;
const RESTARTED_LOAD_MS = 2_500;
const FIRST_CUT_MS = 1_500;
/** The second cut comes after the restart (so that it reaches the new process too), not before this. */
const SECOND_CUT_MS = 7_000;
/** The kill waits for the victim to relay streams (two, or one after 0.5 s; at most 3 s). */
const KILL_AT_MS = 2_500;
/** The victim's first video jobs (after the first cut): due for their first poll about when it is killed. */
const EARLY_VIDEOS_MS = 2_000;
const VICTIM = 1;

describe("the ledger with three gateway processes, a SIGKILL and cut database connections", () => {
  const bench = useClusterBench("gateway-e2e-crash-");

  function writeConfig(name: string): string {
    const mix = mixConfig(bench);
    return bench.writeConfig(name, {
      server: { host: "127.0.0.1", drain_timeout_ms: 3_000 },
      database: { pool_size: 8 },
      logging: { level: "warn" },
      providers: {
        mock: { protocol: "openai", base_url: bench.upstream.baseUrl({ "x-mock-chunk-delay-ms": CHUNK_DELAY_MS }), api_key: "mock-key" },
        ...mix.providers,
      },
      models: { "crash-chat": { kind: "chat", upstream: "mock-gpt-small", targets: ["mock"] }, ...mix.models },
      plans: { crash: { daily_tokens: DAILY_TOKENS, context_limit: 128_000 }, ...mix.plans },
      default_plan: "crash",
      media: mix.media,
      quota: { heartbeat_seconds: 1, instance_timeout_seconds: 3, expiry_sweep_seconds: 1, lease_idle_ms: 1_000 },
    });
  }
  const cli = bench.cli;

  async function scenario(worker: boolean) {
    const label = worker ? "worker" : "no-worker";
    const db = await bench.database();
    const configFile = writeConfig(label);
    const emails = Array.from({ length: USERS }, (_, i) => `crash-${label}-${i}@example.test`);
    const [users, mixUsers] = await Promise.all([
      Promise.all(emails.map((email) => cli(["users", "create", "--email", email, "--password", "correct horse"], configFile, db))),
      createMixUsers(bench, configFile, db, label),
    ]);
    const keys = await Promise.all(emails.map((email) => cli(["keys", "create", "--user", email], configFile, db)));
    expect(keys.map((k) => k.user_id)).toEqual(users.map((u) => u.id));

    const cluster = bench.cluster({ configFile, databaseUrl: db.url, worker });
    await Promise.all(Array.from({ length: PROCESSES }, (_, i) => cluster.start(i)));
    const [sessions] = await Promise.all([
      logInAll(cluster.current[0]!.url, emails),
      enableAutoResets(cluster.current[2]!.url, mixUsers.resets.email),
    ]);

    const upstreamBefore = bench.upstream.requests.length;
    const sampler = bench.running(startSampler(db.url, 100));
    const load = bench.running(
      startLoad({
        cluster,
        keys: keys.map((k) => k.key!),
        model: "crash-chat",
        clients: CLIENTS,
        streams,
        maxTokens: MAX_TOKENS,
        pauseMs: 5,
      }),
    );
    const mix = bench.running(
      startMix({
        cluster,
        label,
        users: mixUsers,
        chatModel: "crash-chat",
        senders: sessions.map((s, i) => ({ headers: s.headers, email: emails[i]! })),
        victim: VICTIM,
      }),
    );
    bench.running(mix.resets);
    const t0 = performance.now();
    const at = (ms: number) => sleep(Math.max(0, t0 + ms - performance.now()));
    const sinceStart = (t: number) => Math.round(t - t0);
    const cuts: { atMs: number; terminated: number }[] = [];
    const cut = async (ms: number) => {
      await at(ms);
      const started = performance.now();
      cuts.push({ atMs: sinceStart(started), terminated: await cutConnections(db.url) });
    };

    const firstCut = cut(FIRST_CUT_MS);
    // Video jobs for the victim: two it may be polling at the kill, two it took just before it. Meanwhile no
    // other submission goes to it (one cut short by the kill could leave its hold without a job until it expires).
    await at(EARLY_VIDEOS_MS);
    await mix.victimDown();
    const victimVideos = await mix.videos.submitTo(VICTIM, 2);
    await at(KILL_AT_MS);
    victimVideos.push(...(await mix.videos.submitTo(VICTIM, 2)));
    // The kill: once the victim relays streams, SIGKILL, then a restart on the same port, which the clients keep
    // sending to (refused meanwhile).
    const waitStarted = performance.now();
    for (;;) {
      const waited = performance.now() - waitStarted;
      const { flowing } = load.streamsInFlight(VICTIM, 0);
      if (flowing >= 2 || (flowing >= 1 && waited > 500) || waited > 3_000) break;
      await sleep(5);
    }
    const inFlight = load.streamsInFlight(VICTIM, 0);
    const victim = await cluster.kill(VICTIM);
    const killAt = victim.killedAt!;
    await cluster.start(VICTIM, victim.port);
    mix.victimBack();
    const restartedAt = performance.now();
    await firstCut;
    await cut(Math.max(SECOND_CUT_MS, sinceStart(restartedAt) + 500));
    await at(Math.max(LOAD_MS, sinceStart(restartedAt) + RESTARTED_LOAD_MS));
    await Promise.all([load.stop(), mix.stop()]);
    // The resets user's clients go on until the week's resets are all used and the day has run out again.
    const resetsUsed = await withPool(db.url, (pool) => resetsRunOut(pool, mixUsers.resets.id, mix.resets, RESET_WEEKLY, 30_000));
    await mix.resets.stop();
    const loadEnded = performance.now();

    // Every reserved unit comes back: the survivors' leases give back and close after lease_idle_ms (1 s), the killed
    // process's expire once its heartbeat is instance_timeout_seconds (3 s) old, at the next sweep (1 s); a video
    // job's hold is resolved when it ends, on a survivor, within two polls of its submission.
    while ((await withPool(db.url, (pool) => anyReserved(pool, { leases: true }))) && performance.now() - loadEnded < 15_000) {
      await sleep(100);
    }
    const victimJobs = await jobsAsShownBy(cluster.current[0]!, mixUsers.video.key, victimVideos);
    const accounts = await withPool(db.url, readAccounts);
    const settledMs = Math.round(performance.now() - loadEnded);
    const sampled = await sampler.stop();

    const { holds, logs, leases, silent, rows } = await withPool(db.url, async (pool) => ({
      holds: (
        await pool.query<{ request_id: string; status: string; amount: string; charged: string | null; user_id: string; kind: string }>(
          "select h.request_id, h.status, h.amount::text, h.charged::text, a.user_id::text, a.kind from quota_holds h join quota_accounts a on a.id = h.account_id",
        )
      ).rows,
      logs: (
        await pool.query<{ request_id: string; user_id: string; status: number; quota_charged: string; streamed: boolean }>(
          "select request_id, user_id::text, status, quota_charged::text, streamed from request_logs",
        )
      ).rows,
      leases: (
        await pool.query<{
          instance_id: string;
          status: string;
          count: number;
          first_resolved: number | null;
          last_resolved: number | null;
          last_created: number;
        }>(
          `select instance_id::text, status, count(*)::int as count,
             (extract(epoch from min(resolved_at)) * 1000)::float8 as first_resolved,
             (extract(epoch from max(resolved_at)) * 1000)::float8 as last_resolved,
             (extract(epoch from max(created_at)) * 1000)::float8 as last_created
           from quota_leases group by instance_id, status order by instance_id, status`,
        )
      ).rows,
      // The processes whose heartbeat stopped: only the killed one (the others stop gracefully later).
      silent: (
        await pool.query<{ id: string; last_seen: number }>(
          "select id::text, (extract(epoch from last_seen_at) * 1000)::float8 as last_seen from gateway_instances where last_seen_at < now() - interval '3 seconds'",
        )
      ).rows,
      rows: await readMix(pool, mixUsers),
    }));
    const exited = cluster.exitedOnTheirOwn();
    const stopped = await cluster.stop();
    // LEDGER_CRASH_LOGS=DIR keeps every process's log (pino JSON) and stderr for a closer look.
    const keep = process.env.LEDGER_CRASH_LOGS;
    if (keep) {
      mkdirSync(keep, { recursive: true });
      for (const p of cluster.all) {
        writeFileSync(path.join(keep, `${label}-${p.index}.${p.generation}.log`), p.serve.stdout());
        writeFileSync(path.join(keep, `${label}-${p.index}.${p.generation}.stderr`), p.serve.stderr());
      }
    }

    // ---- what happened, printed whatever the outcome ----
    const outcomes = load.outcomes;
    const resetOutcomes = mix.resets.outcomes;
    const run: MixRun = {
      t0,
      victim: VICTIM,
      killedAtWall: victim.killedAtWall!,
      victimVideos,
      victimJobs,
      resetsUsed,
      chatUserIds: users.map((u) => u.id!),
      upstreamVideoSubmissions: bench.upstream.requests.slice(upstreamBefore).filter((r) => r.path === "/v1/video/generations").length,
    };
    const mixed = mixReport(mix, rows, run);
    const fromVictim = (o: Outcome) => o.process === VICTIM && o.generation === 0;
    const logById = new Map(logs.map((l) => [l.request_id, l]));
    const holdsById = new Map<string, typeof holds>();
    for (const h of holds) holdsById.set(h.request_id, [...(holdsById.get(h.request_id) ?? []), h]);
    const byStatus = (list: Outcome[]) => {
      const counts: Record<string, number> = {};
      for (const o of list) counts[o.status] = (counts[o.status] ?? 0) + 1;
      return counts;
    };
    const answered = outcomes.filter((o) => o.requestId !== null);
    const percentiles = (list: number[]) => {
      const sorted = [...list].sort((a, b) => a - b);
      const q = (p: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0);
      return { p50: q(0.5), p95: q(0.95), max: q(1) };
    };
    // Answers of the killed process that the log does not have: streams the kill cut (never received in full).
    const lostFromVictim = answered.filter((o) => fromVictim(o) && o.status === 200 && !logById.has(o.requestId!));
    const logLines = cluster.logSummary();
    const report = {
      scenario: label,
      requests: outcomes.length,
      json: byStatus(outcomes.filter((o) => o.kind === "json")),
      jsonLatencyMs: percentiles(outcomes.filter((o) => o.kind === "json" && o.status === 200).map((o) => o.endedAt - o.startedAt)),
      streamMs: percentiles(outcomes.filter((o) => o.kind === "stream" && o.completed).map((o) => o.endedAt - o.startedAt)),
      streams: {
        statuses: byStatus(outcomes.filter((o) => o.kind === "stream")),
        completed: outcomes.filter((o) => o.kind === "stream" && o.completed).length,
        incomplete: outcomes.filter((o) => o.kind === "stream" && o.status === 200 && !o.completed).length,
      },
      perProcess: Array.from({ length: PROCESSES }, (_, i) => ({
        process: i,
        generations: [0, 1].map((g) => byStatus(outcomes.filter((o) => o.process === i && o.generation === g))),
      })),
      serverErrors: outcomes
        .filter((o) => o.status >= 500)
        .map((o) => ({ process: o.process, gen: o.generation, status: o.status, kind: o.kind, at: sinceStart(o.endedAt), error: o.error })),
      loadMs: sinceStart(loadEnded),
      kill: { atMs: sinceStart(killAt), streamsInFlight: inFlight, restartedAtMs: sinceStart(restartedAt) },
      cuts,
      victimLost: {
        total: lostFromVictim.length,
        streamsCut: lostFromVictim.filter((o) => o.kind === "stream").length,
        json: lostFromVictim
          .filter((o) => o.kind === "json")
          .map((o) => ({ status: o.status, endedBeforeKillMs: Math.round(killAt - o.endedAt) })),
      },
      holds: holds.length,
      logRows: logs.length,
      leases: leases.map((l) => ({
        process: silent.some((i) => i.id === l.instance_id) ? "killed" : "survivor",
        status: l.status,
        count: l.count,
        resolvedAfterKillMs:
          l.first_resolved === null
            ? null
            : [Math.round(l.first_resolved - victim.killedAtWall!), Math.round(l.last_resolved! - victim.killedAtWall!)],
        ...(silent[0]?.id === l.instance_id && l.first_resolved !== null
          ? { resolvedAfterLastBeatMs: Math.round(l.first_resolved - silent[0].last_seen) }
          : {}),
      })),
      sampler: {
        samples: sampled.samples,
        failures: sampled.failures,
        violations: sampled.violations.length,
        unreconciled: sampled.unreconciled.length,
        peakShare: Number(sampled.peakShare.toFixed(3)),
        peakPending: String(sampled.peakPending),
      },
      pendingZeroAfterMs: settledMs,
      accounts: accounts.map((a) => ({ posted: String(a.posted), pending: String(a.pending), allowance: String(a.credits + a.restored) })),
      ...mixed,
      gatewayLogs: logLines,
      exited,
      stopped,
    };
    console.log(
      `ledger crash (${label}):\n${Object.entries(report)
        .map(([key, value]) => `  ${key}: ${JSON.stringify(value, (_, v: unknown) => (typeof v === "bigint" ? String(v) : v))}`)
        .join("\n")}`,
    );

    // ---- the proof ----
    // No process ended on its own: the victim lived until its SIGKILL, the others until the drain.
    expect(exited).toEqual([]);
    // The kill found streams under way, and the load was real on every process.
    expect(inFlight.flowing).toBeGreaterThan(0);
    expect(outcomes.filter((o) => o.process === VICTIM && o.generation === 1 && o.completed).length).toBeGreaterThan(5);
    expect(cuts.every((c) => c.terminated > 0)).toBe(true);
    for (let i = 0; i < PROCESSES; i++) expect(outcomes.filter((o) => o.process === i && o.completed).length).toBeGreaterThan(10);
    expect(outcomes.filter((o) => o.kind === "stream" && o.completed).length).toBeGreaterThan(5);

    // Never more used or reserved than allowed, and the accounts reconciled with their leases, holds and request
    // log, at every sample.
    expect(sampled.samples).toBeGreaterThan(50);
    expect(sampled.violations).toEqual([]);
    expect(sampled.unreconciled).toEqual([]);

    // Every reserved unit came back within the documented expiry (the survivors' leases give back after
    // lease_idle_ms, 1 s here).
    // (A daily account for each chat user, the resets user and the video user; the reseller pays in USD only.)
    expect(accounts.map((a) => a.userId).sort()).toEqual([...users.map((u) => u.id!), mixUsers.resets.id, mixUsers.video.id].sort());
    expect(accounts.map((a) => a.pending)).toEqual(accounts.map(() => 0n));
    expect(accounts.filter((a) => !a.logged)).toEqual([]);
    expect(await withPool(db.url, reconcileLedger)).toEqual([]);
    expect(leases.filter((l) => l.status === "pending")).toEqual([]);
    // The killed process's leases were expired by the survivors' sweep once its last heartbeat was
    // instance_timeout_seconds (3 s) old, within about one sweep after that; no other process's were.
    expect(silent).toHaveLength(1);
    const [killed] = silent;
    const expired = leases.find((l) => l.instance_id === killed!.id && l.status === "expired");
    expect(expired?.count ?? 0).toBeGreaterThan(0);
    expect(expired!.last_created).toBeLessThan(victim.killedAtWall!);
    expect(expired!.first_resolved! - killed!.last_seen).toBeGreaterThan(3_000);
    expect(expired!.last_resolved! - killed!.last_seen).toBeLessThan(10_000);
    expect(leases.filter((l) => l.status === "expired" && l.instance_id !== killed!.id)).toEqual([]);
    expect(stopped.map((s) => s.exitCode)).toEqual(stopped.map(() => 0));

    // The ledger agrees with the request log, user by user and request by request; nothing is charged twice. A
    // day's used is its requests' charges (video jobs' included) plus the transfers its user sent (`applied`).
    const sum = (list: { charged: string | null }[]) => list.reduce((n, h) => n + BigInt(h.charged ?? 0), 0n);
    for (const account of accounts) {
      const logged = logs.filter((l) => l.user_id === account.userId).reduce((n, l) => n + BigInt(l.quota_charged), 0n);
      const posted = holds.filter((h) => h.user_id === account.userId && h.kind === "daily_allowance" && h.status === "posted");
      const sent = sum(posted.filter((h) => h.request_id.startsWith("transfer:")));
      expect({ user: account.userId, posted: account.posted }).toEqual({ user: account.userId, posted: logged + sent });
      expect(sum(posted)).toBe(account.posted);
    }
    const twice = [...holdsById].filter(([, list]) => list.length > 1).map(([id]) => id);
    expect(twice).toEqual([]);
    expect(new Set(logs.map((l) => l.request_id)).size).toBe(logs.length);
    // Every hold is a request's on the day (chat), a video job's, a transfer's, a reset's, or an evaluation's on
    // the USD balance; each kind is checked against its own rows below. A request's hold and its log row agree.
    const holdKind = (h: (typeof holds)[number]) => {
      if (h.kind === "reseller_usd") return "evaluation";
      if (h.kind === "weekly_resets" && h.request_id.startsWith("reset:")) return "reset";
      if (h.kind !== "daily_allowance") return "unknown";
      return /^(video|transfer):/.exec(h.request_id)?.[1] ?? "request";
    };
    expect(holds.filter((h) => holdKind(h) === "unknown")).toEqual([]);
    const disagreeing = holds
      .filter((h) => holdKind(h) === "request")
      .filter((h) => {
        const log = logById.get(h.request_id);
        return !log || log.quota_charged !== (h.status === "posted" ? h.charged : "0") || log.user_id !== h.user_id;
      })
      .map((h) => ({ hold: h, log: logById.get(h.request_id) }));
    expect(disagreeing).toEqual([]);
    expect(holds.filter((h) => h.status !== "posted" && h.status !== "voided")).toEqual([]);
    // As designed: no charge above its hold, so no overshoot may excuse an account over its allowance.
    expect(holds.filter((h) => h.charged !== null && BigInt(h.charged) > BigInt(h.amount))).toEqual([]);

    // Every answer any process gave in full, the killed one's too, is logged and posted, with the usage the
    // client was shown and the charge it was told (the resets user's too).
    const received = [...outcomes, ...resetOutcomes].filter((o) => o.completed);
    const unaccounted = received
      .filter((o) => {
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
      })
      .map((o) => ({ outcome: o, log: logById.get(o.requestId!), holds: holdsById.get(o.requestId!) }));
    expect(unaccounted).toEqual([]);
    expect(received.filter(fromVictim).length).toBeGreaterThan(0);

    // What the kill cost: only streams it cut (in flight at the kill, never received in full), uncharged.
    expect(lostFromVictim.filter((o) => o.completed || o.kind !== "stream" || o.endedAt < killAt)).toEqual([]);

    // The mix, through the same kill and cuts (test/helpers/crash-mix-proof.ts, mixMismatches): every evaluation
    // received (the victim's too) posted once on the USD balance at the price its answer named, and the balance
    // reconciled; every video job (four taken by the victim just before its kill) completed once by a survivor, its
    // hold posted once, one log row; exactly the week's resets used, automatically, over every process, the day
    // reconciled and every 200 charged (above); every transfer (some sent to the victim) ended exactly once, its
    // hold and the recipient's restoration equal to what it applied.
    expect(mixMismatches(mix, rows, run)).toEqual(NO_MIX_MISMATCHES);
    expect(mixed.reseller.completed).toBeGreaterThan(10);
    expect(mixed.reseller.fromVictim).toBeGreaterThan(0);
    for (let i = 0; i < PROCESSES; i++) expect(resetOutcomes.filter((o) => o.process === i && o.completed).length).toBeGreaterThan(0);
    expect(mixed.transfers.finals["200 completed"]).toBeGreaterThan(5);
    expect(mixed.transfers.answeredByVictim).toBeGreaterThan(0);
  }

  it("with the background worker in every process", () => scenario(true), 120_000);
  it("with every process on --no-worker", () => scenario(false), 120_000);
});
