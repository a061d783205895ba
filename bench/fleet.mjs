// The hot-account fleet (issue 34, docs/performance.md "Hot-account fleet"): FLEET_PROCESSES gateway processes'
// ledgers, each with its own pg pool, LISTEN connection, gateway instance and escrow, built by the real ledger code
// from dist/, over one PostgreSQL (embedded, as the other benches start it, or DATABASE_URL). They are hosted in
// FLEET_HOSTS Node processes (bench/fleet-child.mjs): the machine has 2 cores, not 64.
//
//   npm run bench:fleet            # or, after a build: node bench/fleet.mjs
//
// Two workloads, each in rate steps (FLEET_RATES requests/s over the whole fleet, FLEET_SECONDS each) after a warm-up
// (FLEET_WARM_SECONDS at the first rate: the leases open), shown apart:
//   hot   one user. Its day's allowance is sized so that the steps fit in it with the leases' headroom to spare
//         (HEADROOM_SECONDS of demand, leased ahead), and a last step ("end", twice as long, at the highest rate)
//         spends the rest about half-way: the account's last units, shared out while the leases run dry, and the
//         refusals once the day is spent.
//   zipf  requests spread over FLEET_ACCOUNTS users by Zipf(FLEET_ZIPF), allowances never reached.
// Requests are chat reservations: hold = prompt + max_tokens, held for FLEET_LATENCY_MS (uniform), then settled
// with the prompt plus what was generated (2 % overrun their hold by 10 %).
//
// Reported per step: requests/s admitted, lease syncs/s (the ledgers' own count) and statements/s (counted on
// every connection), PostgreSQL CPU (embedded only: every backend's, from /proc), the share of reservations that
// waited for a sync and that wait's p50/p99/max (timed by the escrow itself, escrow.ts), refusals and errors; and on
// a second line what the hosts saw: their Node CPU (share of one core), their event loops' p99 delay, and the full
// syncs (grants, on the account row) and post-only syncs (the lease row only) per second with the p50/p99 of each
// statement from its send to its answer; and on a third, the messages on the give-back channel (give-back.ts) per
// second: asks (a process that could not cover a request asks every other process holding a lease on the account)
// and answers (each of them gave back and says so). For the step in which the day runs out, what the requests were
// answered second by second: admitted, refused (429) or past their deadline (503).
// Checked at the end of each workload: what every process saw charged equals what the database posted, and the
// units admitted (each charge up to its hold) never exceed the allowance; for the hot day, the units left unused
// and how many of them sat in leases (free in the processes' memory) while requests were refused.
import { fork } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startEmbeddedPostgres } from "../dist/src/db/embedded.js";
import { runMigrations } from "../dist/src/db/migrate.js";
import { createPool } from "../dist/src/db/pool.js";
import { createLogger } from "../dist/src/logger.js";
import { HEADROOM_SECONDS } from "../dist/src/quota/lease-admission.js";
import { benchDir } from "./gateway-server.mjs";
import { registerPostmaster, runBenchmark } from "./processes.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const env = (name, fallback) => process.env[name] ?? fallback;
const PROCESSES = Number(env("FLEET_PROCESSES", 64));
const HOSTS = Number(env("FLEET_HOSTS", 4));
const POOL = Number(env("FLEET_POOL", 2));
/** quota.commit_group_ms of every process (its default 0). */
const GROUP_MS = Number(env("FLEET_GROUP_MS", 0));
const RATES = env("FLEET_RATES", "500,1000,2000,4000").split(",").map(Number);
const SECONDS = Number(env("FLEET_SECONDS", 10));
const WARM_SECONDS = Number(env("FLEET_WARM_SECONDS", 3));
const ACCOUNTS = Number(env("FLEET_ACCOUNTS", 10_000));
const ZIPF = Number(env("FLEET_ZIPF", 1.1));
const LATENCY_MS = env("FLEET_LATENCY_MS", "200-2000").split("-").map(Number);
const WORKLOADS = env("FLEET_WORKLOADS", "hot,zipf").split(",");
/** What a chat request of fleet-child.mjs is charged on average: prompt 1100 + max_tokens 1587.2 × 0.55 (+ overruns). */
const MEAN_CHARGE = 1100 + 1587.2 * 0.55;

const quantile = (sorted, q) => (sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]);
const fmt = (n, digits = 0) => n.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits });

/** CPU (ms) of the embedded PostgreSQL: its postmaster and every process it forked (USER_HZ 100). */
function postgresCpuMs(postmasterPid) {
  if (!postmasterPid) return null;
  let total = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
    if (Number(entry) !== postmasterPid && Number(fields[1]) !== postmasterPid) continue;
    total += (Number(fields[11]) + Number(fields[12])) * 10;
  }
  return total;
}

/** A host of ledgers (fleet-child.mjs), answering requests by id over IPC. */
function startHost() {
  const child = fork(path.join(here, "fleet-child.mjs"), [], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const pending = new Map();
  let next = 0;
  child.on("message", (msg) => {
    const p = pending.get(msg.id);
    pending.delete(msg.id);
    if (msg.error) p?.reject(new Error(msg.error));
    else p?.resolve(msg.value);
  });
  child.on("exit", (code) => {
    for (const p of pending.values()) p.reject(new Error(`fleet host exited (${code})`));
    pending.clear();
  });
  return {
    child,
    call: (cmd, args = {}) =>
      new Promise((resolve, reject) => {
        const id = ++next;
        pending.set(id, { resolve, reject });
        child.send({ id, cmd, ...args });
      }),
  };
}

async function database(dataDir) {
  if (process.env.DATABASE_URL) return { url: process.env.DATABASE_URL, postmasterPid: null, stop: async () => {} };
  const pgDir = path.join(dataDir, "db");
  registerPostmaster(path.join(pgDir, "pg", "postmaster.pid"));
  const pg = await startEmbeddedPostgres({ dataDir: pgDir, mode: "own" });
  const postmasterPid = Number(readFileSync(path.join(pgDir, "pg", "postmaster.pid"), "utf8").split("\n")[0]);
  return { url: pg.url, postmasterPid, stop: () => pg.stop() };
}

async function newUsers(pool, prefix, count) {
  const { rows } = await pool.query(
    `insert into users (email, password_hash, plan)
     select $1 || '-' || g || '@fleet.test', 'x', 'free' from generate_series(1, $2::int) g returning id`,
    [`${prefix}-${Date.now()}`, count],
  );
  return rows.map((r) => r.id);
}

/** One workload's steps over a fresh fleet; returns the lines it printed. */
async function runWorkload(db, pool, workload) {
  const hot = workload === "hot";
  const users = await newUsers(pool, workload, hot ? 1 : ACCOUNTS);
  // Hot: the steps fit, with the leases' headroom to spare (units leased ahead of demand leave the account row before
  // they are used: a step whose last seconds find the row empty measures the day's end, not the step), and the end
  // step runs out about half-way (the day is spent during the run).
  const planned = RATES.reduce((sum, r) => sum + r * SECONDS * MEAN_CHARGE, RATES[0] * WARM_SECONDS * MEAN_CHARGE);
  const endSeconds = 2 * SECONDS;
  // First a warm-up: every process's first reservation on an account opens its lease and waits for that (and on
  // one hot account, 64 processes open at once); it is shown, apart from the steps measured against the targets.
  const steps = [
    { label: "warm", rate: RATES[0], seconds: WARM_SECONDS },
    ...RATES.map((rate, i) => ({ label: String(i + 1), rate, seconds: SECONDS })),
    ...(hot ? [{ label: "end", rate: RATES.at(-1), seconds: endSeconds }] : []),
  ];
  const endShare = (Number(HEADROOM_SECONDS) + endSeconds / 2) * RATES.at(-1) * MEAN_CHARGE;
  const allowance = hot ? BigInt(Math.round(planned + endShare)) : 10n ** 12n;
  const hosts = Array.from({ length: HOSTS }, startHost);
  const perHost = hosts.map((_, i) => Math.floor(PROCESSES / HOSTS) + (i < PROCESSES % HOSTS ? 1 : 0));
  const charged = new Map();
  try {
    await Promise.all(hosts.map((h, i) => h.call("init", { url: db.url, ledgers: perHost[i], poolSize: POOL, groupMs: GROUP_MS })));
    console.log(
      `\n${workload}: ${PROCESSES} ledgers (each its own pool of ${POOL}, LISTEN connection, instance and escrow; commit_group_ms ${GROUP_MS}) in ${HOSTS} Node processes;` +
        (hot ? ` one user, allowance ${fmt(Number(allowance))} units` : ` ${fmt(ACCOUNTS)} users, Zipf s=${ZIPF}`) +
        `; holds for ${LATENCY_MS.join("-")} ms`,
    );
    console.log("  step   offered  admitted/s  syncs/s  stmts/s  pg CPU  waited  wait p50    p99    max  refused  errors  (first refusal)");
    for (const { label, rate, seconds } of steps) {
      const cpu0 = postgresCpuMs(db.postmasterPid);
      const t0 = performance.now();
      const results = await Promise.all(
        hosts.map((h, j) =>
          h.call("step", {
            users,
            allowance: String(allowance),
            rate: (rate * perHost[j]) / PROCESSES,
            seconds,
            zipf: hot ? 0 : ZIPF,
            latencyMs: LATENCY_MS,
          }),
        ),
      );
      const wall = (performance.now() - t0) / 1000;
      const cpu = cpu0 === null ? null : (postgresCpuMs(db.postmasterPid) - cpu0) / 1000 / wall;
      const sum = (k) => results.reduce((s, r) => s + r[k], 0);
      const waits = results.flatMap((r) => r.waitsMs).sort((a, b) => a - b);
      const requests = sum("requests");
      for (const r of results)
        for (const [user, c, covered, overrun] of r.perUser) {
          const seen = charged.get(user) ?? { charged: 0n, covered: 0n, overrun: 0n };
          seen.charged += BigInt(c);
          seen.covered += BigInt(covered);
          seen.overrun += BigInt(overrun);
          charged.set(user, seen);
        }
      const firsts = results.map((r) => r.firstRefusalMs).filter((x) => x !== null);
      const hostCpu = results.reduce((s, r) => s + r.cpuMs, 0) / 1000 / wall;
      const loopP99 = Math.max(...results.map((r) => r.loopP99Ms));
      const statement = (name) => results.flatMap((r) => r.byName[name] ?? []).sort((a, b) => a - b);
      const timings = [
        ["full", "quota_sync_lease"],
        ["post", "quota_post_lease"],
      ].map(([label, name]) => {
        const t = statement(name);
        return `${label} ${fmt(t.length / seconds)}/s ${fmt(quantile(t, 0.5), 1)}/${fmt(quantile(t, 0.99), 1)} ms`;
      });
      console.log(
        `  ${label.padStart(4)} ${fmt(rate).padStart(9)} ${fmt(sum("admitted") / seconds).padStart(11)} ${fmt(sum("syncs") / seconds).padStart(8)} ${fmt(sum("statements") / seconds).padStart(8)} ${cpu === null ? "     -" : `${fmt(cpu * 100)}%`.padStart(6)} ${`${fmt((100 * sum("waits")) / Math.max(1, requests), 1)}%`.padStart(7)} ${fmt(quantile(waits, 0.5), 1).padStart(6)} ms ${fmt(quantile(waits, 0.99), 1).padStart(6)} ${fmt(waits.at(-1) ?? 0, 1).padStart(6)} ${fmt(sum("refused")).padStart(8)} ${fmt(sum("errors") + sum("settleErrors")).padStart(7)}${firsts.length ? `  (${fmt(Math.min(...firsts) / 1000, 1)} s)` : ""}`,
      );
      console.log(`         node CPU ${fmt(hostCpu * 100)}%, loop delay p99 ${fmt(loopP99, 1)} ms; syncs ${timings.join(", ")} (p50/p99)`);
      const notified = (verb) => results.reduce((s, r) => s + (r.notifies[verb] ?? 0), 0) / seconds;
      console.log(`         give-back channel: asks ${fmt(notified("ask"))}/s, answers ${fmt(notified("gave"))}/s`);
      if (label === "end") console.log(`         by second (admitted/429/503): ${bySecond(results).join(" ")}`);
    }
    if (hot) {
      // The day is spent: what the processes still hold leased while their requests are refused.
      const free = (await Promise.all(hosts.map((h) => h.call("free")))).reduce((s, f) => s + BigInt(f), 0n);
      console.log(`  day's end: ${fmt(Number(free))} units sat free in the processes' leases while requests were refused`);
    }
    await Promise.all(hosts.map((h) => h.call("close")));
    await verify(pool, users, charged, allowance, hot);
  } finally {
    for (const h of hosts) if (h.child.exitCode === null) h.child.kill();
  }
}

/** The hosts' answers of a step added up second by second, as `admitted/refused/errors`. */
function bySecond(results) {
  const seconds = Math.max(...results.map((r) => r.bySecond.length));
  return Array.from({ length: seconds }, (_, i) => {
    const at = results.map((r) => r.bySecond[i] ?? { admitted: 0, refused: 0, errors: 0 });
    return ["admitted", "refused", "errors"].map((k) => at.reduce((s, x) => s + x[k], 0)).join("/");
  });
}

/** Every process's memory against the database: the charges, and the allowance never exceeded. */
async function verify(pool, users, charged, allowance, hot) {
  const { rows } = await pool.query(
    `select user_id::text, credits::text, restored::text, debits_posted::text as posted, debits_pending::text as pending
     from quota_account_balances where user_id = any($1::uuid[]) and kind = 'daily_allowance'`,
    [users],
  );
  let mismatches = 0;
  let over = 0;
  let posted = 0n;
  let pending = 0n;
  let admitted = 0n;
  for (const row of rows) {
    const seen = charged.get(row.user_id) ?? { charged: 0n, covered: 0n, overrun: 0n };
    posted += BigInt(row.posted);
    pending += BigInt(row.pending);
    admitted += seen.covered;
    if (BigInt(row.posted) !== seen.charged) mismatches++;
    // Admitted: each charge up to its hold (an overrun is posted all the same, billing.md "Overshoot").
    if (
      seen.covered > BigInt(row.credits) + BigInt(row.restored) ||
      BigInt(row.posted) - seen.overrun > BigInt(row.credits) + BigInt(row.restored)
    )
      over++;
  }
  console.log(
    `  check: ${rows.length} accounts; charged as every process saw it = posted in the database: ${mismatches === 0 ? "yes" : `NO (${mismatches} differ)`};` +
      ` admitted above the allowance: ${over === 0 ? "never" : `${over} ACCOUNTS`}; pending after close: ${fmt(Number(pending))}`,
  );
  if (hot) {
    const left = allowance - admitted;
    console.log(
      `  hot day: allowance ${fmt(Number(allowance))}, admitted ${fmt(Number(admitted))} (${fmt((100 * Number(admitted)) / Number(allowance), 2)}%), posted ${fmt(Number(posted))}; left unused ${fmt(Number(left))} units (${fmt((100 * Number(left)) / Number(allowance), 3)}%)`,
    );
  }
  if (mismatches > 0 || over > 0 || pending !== 0n) process.exitCode = 1;
}

async function main() {
  const dataDir = await benchDir("gateway-fleet-");
  const db = await database(dataDir);
  const pool = createPool(db.url, 2, () => {});
  try {
    await runMigrations(pool, createLogger("silent"));
    console.log(
      `fleet: ${PROCESSES} gateway processes' ledgers in ${HOSTS} Node processes over ${process.env.DATABASE_URL ? "DATABASE_URL" : "the embedded PostgreSQL"}; ` +
        `${os.cpus().length} cores, load ${os
          .loadavg()
          .map((l) => l.toFixed(2))
          .join(" ")}; steps of ${SECONDS} s`,
    );
    for (const workload of WORKLOADS) await runWorkload(db, pool, workload);
  } finally {
    await pool.end();
    await db.stop();
  }
}

await runBenchmark("fleet", main);
