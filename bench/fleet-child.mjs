// One host of the fleet bench (bench/fleet.mjs): several gateway processes' ledgers in one Node process, each
// with its own pg pool, LISTEN connection, gateway instance and ledger built by the real code from dist/. The
// machine has too few cores for 64 Node processes; what a ledger shares with the others of its host is the event
// loop (and so its delays), never a connection, an instance or a lease.
//
// Driven over IPC by the orchestrator: "init" builds the ledgers, "step" runs one load step and answers with what
// every ledger saw, "free" reports the units leased and unused, "close" closes everything.
import { randomUUID } from "node:crypto";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { createLogger } from "../dist/src/logger.js";
import { startListener } from "../dist/src/db/listener.js";
import { createPool } from "../dist/src/db/pool.js";
import { createQuotaLedger, registerInstance } from "../dist/src/quota/index.js";

const KIND = "daily_allowance";
const silent = createLogger("silent");

/** What every ledger of this host records during a step; the waits come from the ledger's own timer (escrow.ts). */
let step = freshStep();
function freshStep() {
  return { waitsMs: [], statements: 0, byName: new Map(), notifies: {} };
}

/** The give-back channel's messages (give-back.ts) this host sent, by verb: `ask:...` counts as "ask". */
function countNotify(values) {
  const verb = String(values?.[1] ?? "").split(":")[0];
  step.notifies[verb] = (step.notifies[verb] ?? 0) + 1;
}

/** The event loop's delays during a step: a loop busy with other ledgers' work delays every wait it times. */
const loopDelay = monitorEventLoopDelay({ resolution: 10 });
loopDelay.enable();

/** How long each statement took from its send to its answer, by the statement's name (quota_sync_lease, ...). */
function timed(name, promise) {
  const t0 = performance.now();
  const times = step.byName.get(name) ?? [];
  step.byName.set(name, times);
  const done = () => times.push(performance.now() - t0);
  promise.then(done, done);
  return promise;
}

/** The ledger's metrics: only the waits are kept (syncs are read from its stats). */
const metrics = {
  account: () => ({
    held() {},
    posted() {},
    voided() {},
    expired() {},
    synced() {},
    syncFailed() {},
    withdrawn() {},
    waited: (seconds) => step.waitsMs.push(seconds * 1000),
  }),
  expired() {},
};

const fleet = [];

async function init({ url, ledgers, poolSize, groupMs }) {
  for (let i = 0; i < ledgers; i++) {
    const pool = createPool(url, poolSize, () => {});
    // Every statement of this process (syncs, opens, heartbeats, notifies), counted on its connections.
    pool.on("connect", (client) => {
      const query = client.query.bind(client);
      client.query = (...args) => {
        step.statements++;
        if (typeof args[0] === "string" && args[0].includes("pg_notify")) countNotify(args[1]);
        const result = query(...args);
        const name = args[0]?.name;
        return name && typeof result?.then === "function" ? timed(name, result) : result;
      };
    });
    const instance = await registerInstance(pool, { heartbeatMs: 15_000, timeoutMs: 90_000 });
    const listener = await startListener({ pool, logger: silent });
    const ledger = createQuotaLedger(pool, {
      instance,
      listener,
      maxHoldSeconds: 3600,
      configRevision: BigInt(Math.floor(Date.now() / 1000)),
      admissionTimeoutMs: 2000,
      statementTimeoutMs: 15_000,
      commitGroupMs: groupMs,
      metrics,
    });
    fleet.push({ pool, instance, listener, ledger, syncs: 0 });
  }
}

/** Zipf(s) over `n` ranks: the cumulative weights, searched by bisection. */
function zipfSampler(n, s) {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let k = 0; k < n; k++) cdf[k] = sum += 1 / Math.pow(k + 1, s);
  return () => {
    const u = Math.random() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

const pick = (list) => list[Math.floor(Math.random() * list.length)];
const uniform = (lo, hi) => lo + Math.random() * (hi - lo);

/**
 * A chat request's reservation and its charge: the hold is the prompt plus max_tokens; the charge is the prompt
 * plus what was generated, and 2 % of answers overrun their hold by 10 % (a stream that overran, billing.md).
 */
function chatRequest() {
  const prompt = Math.round(uniform(200, 2000));
  const maxTokens = pick([256, 512, 1024, 2048, 4096]);
  const hold = BigInt(prompt + maxTokens);
  const overrun = Math.random() < 0.02;
  const charge = overrun ? (hold * 11n) / 10n : BigInt(prompt + Math.round(maxTokens * uniform(0.1, 1)));
  return { hold, charge };
}

/** Runs one step: `rate` requests/s over this host's ledgers for `seconds`, on `users` (one, or a Zipf spread). */
async function runStep({ users, allowance, rate, seconds, zipf, latencyMs }) {
  step = freshStep();
  loopDelay.reset();
  const cpuBefore = process.cpuUsage();
  const syncsBefore = fleet.map((p) => syncsOf(p.ledger));
  const waitsBefore = fleet.map((p) => waitsOf(p.ledger));
  const sample = zipf ? zipfSampler(users.length, zipf) : () => 0;
  const perUser = new Map();
  const totals = { requests: 0, admitted: 0, refused: 0, errors: 0, settleErrors: 0, firstRefusalMs: null };
  const inFlight = new Set();
  const startedAt = performance.now();
  const endAt = startedAt + seconds * 1000;
  const perLedger = rate / fleet.length;

  /** Each second of the step: how many answers were an admission, a refusal (429) or a missed deadline (503). */
  const bySecond = [];
  const answered = (outcome) => {
    const second = Math.floor((performance.now() - startedAt) / 1000);
    bySecond[second] ??= { admitted: 0, refused: 0, errors: 0 };
    bySecond[second][outcome]++;
  };
  const one = async (entry) => {
    const user = users[sample()];
    const { hold, charge } = chatRequest();
    totals.requests++;
    let result;
    try {
      result = await entry.ledger.reserve({ kind: KIND, userId: user, base: allowance, amount: hold, requestId: randomUUID() });
    } catch {
      totals.errors++;
      answered("errors");
      return;
    }
    if (!result.ok) {
      totals.refused++;
      answered("refused");
      totals.firstRefusalMs ??= performance.now() - startedAt;
      return;
    }
    totals.admitted++;
    answered("admitted");
    await new Promise((resolve) => setTimeout(resolve, uniform(latencyMs[0], latencyMs[1])));
    try {
      await entry.ledger.settle(result.hold.id, charge);
    } catch {
      totals.settleErrors++;
      return;
    }
    const seen = perUser.get(user) ?? { charged: 0n, covered: 0n, overrun: 0n };
    seen.charged += charge;
    seen.covered += charge < hold ? charge : hold;
    if (charge > hold) seen.overrun += charge - hold;
    perUser.set(user, seen);
  };

  // Poisson arrivals per ledger, drawn on a 2 ms tick (the gaps of a loaded event loop are caught up, not lost).
  const next = fleet.map(() => startedAt - Math.log(1 - Math.random()) * (1000 / perLedger));
  await new Promise((resolve) => {
    const tick = () => {
      const now = performance.now();
      const until = Math.min(now, endAt);
      for (const [i, entry] of fleet.entries()) {
        while (next[i] <= until) {
          const p = one(entry).finally(() => inFlight.delete(p));
          inFlight.add(p);
          next[i] += -Math.log(1 - Math.random()) * (1000 / perLedger);
        }
      }
      if (now >= endAt) resolve();
      else setTimeout(tick, 2);
    };
    tick();
  });
  await Promise.all(inFlight);
  const cpu = process.cpuUsage(cpuBefore);
  return {
    ...totals,
    cpuMs: (cpu.user + cpu.system) / 1000,
    loopP99Ms: loopDelay.percentile(99) / 1e6,
    byName: Object.fromEntries(step.byName),
    waitsMs: step.waitsMs,
    waits: fleet.reduce((sum, p, i) => sum + waitsOf(p.ledger) - waitsBefore[i], 0),
    syncs: fleet.reduce((sum, p, i) => sum + syncsOf(p.ledger) - syncsBefore[i], 0),
    statements: step.statements,
    notifies: step.notifies,
    bySecond,
    perUser: [...perUser].map(([user, s]) => [user, String(s.charged), String(s.covered), String(s.overrun)]),
  };
}

const accountOf = (ledger) => ledger.stats().accounts.find((a) => a.kind === KIND);
const syncsOf = (ledger) => accountOf(ledger).syncs;
const waitsOf = (ledger) => accountOf(ledger).waits;

/** Units leased to this host's ledgers that no request holds. */
const free = () => String(fleet.reduce((sum, p) => sum + accountOf(p.ledger).free, 0n));

async function close() {
  await Promise.allSettled(fleet.map((p) => p.ledger.close()));
  await Promise.allSettled(fleet.map((p) => p.instance.stop()));
  await Promise.allSettled(fleet.map((p) => p.listener.close()));
  await Promise.allSettled(fleet.map((p) => p.pool.end()));
}

process.on("message", async (msg) => {
  try {
    if (msg.cmd === "init") process.send({ id: msg.id, value: await init(msg) });
    else if (msg.cmd === "step") process.send({ id: msg.id, value: await runStep(msg) });
    else if (msg.cmd === "free") process.send({ id: msg.id, value: free() });
    else if (msg.cmd === "close") {
      await close();
      process.send({ id: msg.id, value: null });
      process.disconnect();
    }
  } catch (err) {
    process.send({ id: msg.id, error: String(err?.stack ?? err) });
  }
});
