// npm run bench:soak: a gateway restarted on its database, then a steady paced load at once for SOAK_MINUTES (10),
// read minute by minute: latency, failures, the gateway's CPU per request and its RSS. Issue 30's target 4: the first
// minute after a (re)start drops nothing and keeps +p99 within 3× of the later minutes', and RSS stays flat.
// Load starts when /readyz first answers 200, as a load balancer would send it. docs/performance.md, "The soak".
import { readdirSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { request } from "undici";
import { benchDir, startGateway, startMock } from "./gateway-server.mjs";
import { runPacedProcess } from "./paced-load.mjs";
import { cpuTracker, rssMb, runBenchmark, startSampler } from "./processes.mjs";
import { formatTailReport, tailReport } from "./tail-report.mjs";
import { soakVerdicts } from "./verdict.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const MINUTES = Number(process.env.SOAK_MINUTES ?? 10);
const RATE = Number(process.env.SOAK_RATE ?? 500);
// The upstream alone at the same rate, for the overheads: its latency does not change with time.
const BASELINE_SECONDS = Number(process.env.SOAK_BASELINE_SECONDS ?? 30);
const MOCK_KEY = "bench-mock-key";
// SOAK_PROBE=1: bench/gateway-probe.mjs records the first minute inside the gateway (GC pauses, pg calls, event-loop
// delay), and its slow requests are lined up with what it recorded (docs/performance.md, "Finding the tail").
const PROBE = process.env.SOAK_PROBE === "1";
const SLOW_MS = 20;
const chatBody = (model) => JSON.stringify({ model, messages: [{ role: "user", content: "Say hello" }], max_tokens: 16 });

const log = (line) => process.stderr.write(`${line}\n`);

const paced = (t, duration, warmup, window, trace) =>
  runPacedProcess({
    url: `${t.url}/v1/chat/completions`,
    key: t.key,
    body: chatBody(t.model),
    rate: RATE,
    duration,
    warmup,
    window,
    trace,
  });

// A gateway not ready after this long (its database unreachable, say) ends the soak with one line.
const READY_TIMEOUT_MS = 60_000;

async function untilReady(url) {
  const started = performance.now();
  let last = "no answer";
  while (performance.now() - started < READY_TIMEOUT_MS) {
    const res = await request(`${url}/readyz`).catch((err) => void (last = err.message));
    await res?.body.dump();
    if (res?.statusCode === 200) return performance.now() - started;
    if (res) last = `${res.statusCode}`;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`the gateway was not ready ${READY_TIMEOUT_MS / 1000}s after listening (/readyz: ${last})`);
}

/** The first minute's slow requests against what the probe recorded in the gateway, and its slowest seconds. */
function firstMinuteTail(dir, traceFile) {
  const probeFile = readdirSync(dir).find((f) => f.startsWith("probe-"));
  if (!probeFile) return void console.log("(the gateway probe wrote nothing)");
  // Answers in the order they ended, each with the time it was sent.
  const all = JSON.parse(readFileSync(traceFile, "utf8"));
  if (all.length === 0) return void console.log("(no request of the first minute was answered)");
  const start = all.reduce((min, [sent]) => (BigInt(sent) < min ? BigInt(sent) : min), BigInt(all[0][0]));
  const first = all.filter(([sent]) => BigInt(sent) - start < 60_000_000_000n);
  console.log(`\nthe first minute inside the gateway (SOAK_PROBE=1), requests over ${SLOW_MS} ms:`);
  console.log(formatTailReport(tailReport(JSON.parse(readFileSync(path.join(dir, probeFile), "utf8")), first, SLOW_MS)));
  const seconds = new Map();
  for (const [sent, us] of first) {
    const at = Number((BigInt(sent) - start) / 1_000_000_000n);
    const s = seconds.get(at) ?? { at, slow: 0, max: 0 };
    if (us / 1000 > SLOW_MS) s.slow++;
    s.max = Math.max(s.max, us / 1000);
    seconds.set(at, s);
  }
  const worst = [...seconds.values()].sort((a, b) => b.slow - a.slow || b.max - a.max).slice(0, 5);
  console.log(`  slowest seconds: ${worst.map((s) => `${s.at}s (${s.slow} slow, max ${f(s.max, 0)} ms)`).join(", ")}`);
}

const f = (x, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : "-");

async function main() {
  const dataDir = await benchDir("gateway-soak-");
  const mock = await startMock(MOCK_KEY);
  const direct = { url: mock.match[1], key: MOCK_KEY, model: "mock-gpt-small" };
  log(`the upstream alone at ${RATE} req/s for ${BASELINE_SECONDS}s…`);
  const baseline = await paced(direct, BASELINE_SECONDS, 5);
  log(`  direct p50 ${f(baseline.latency.p50)} p99 ${f(baseline.latency.p99)} ms`);

  log("starting the gateway (embedded PostgreSQL unless DATABASE_URL is set), making its user and key, restarting it…");
  const gw = await startGateway(path.join(dataDir, "gateway"), direct.url, path.join(root, "bin/gateway"), {
    mockKey: MOCK_KEY,
    probe: PROBE,
  });
  await gw.restart();
  const readyMs = await untilReady(gw.url);
  log(`  ready ${f(readyMs, 0)} ms after "listening"; ${RATE} req/s for ${MINUTES} min at once…`);

  // Once a second: the gateway's RSS and CPU, keyed by the second of the load they fall in.
  const samples = [];
  const started = performance.now();
  const cpu = cpuTracker(gw.pid);
  const cpuAtStart = cpu();
  const timer = setInterval(() => {
    samples.push({ at: (performance.now() - started) / 1000, rss: rssMb(gw.pid) ?? 0, cpu: cpu() });
  }, 1000);
  const stopSampler = startSampler({ gateway: gw.pid }, 1000);
  const trace = PROBE ? path.join(gw.probeDir, "trace.json") : undefined;
  if (PROBE) {
    process.kill(gw.pid, "SIGUSR2");
    setTimeout(() => process.kill(gw.pid, "SIGUSR2"), 60_000).unref();
  }
  let result;
  let other;
  try {
    result = await paced(gw, MINUTES * 60, 0, 60, trace);
  } finally {
    clearInterval(timer);
    other = stopSampler().otherCpuPercent;
  }
  const minutes = result.windows.map((w, i) => {
    const inMinute = samples.filter((s) => s.at >= i * 60 && s.at < (i + 1) * 60);
    const before = samples.filter((s) => s.at < i * 60).at(-1)?.cpu ?? cpuAtStart;
    const after = inMinute.at(-1)?.cpu ?? before;
    const requests = w.latency?.n ?? 0;
    return Object.assign(w, {
      rssMb: Math.max(0, ...inMinute.map((s) => s.rss)),
      cpuUs: requests
        ? { own: ((after.own - before.own) * 1000) / requests, children: ((after.children - before.children) * 1000) / requests }
        : undefined,
    });
  });

  console.log(
    `\nsoak: ${RATE} req/s of chat for ${MINUTES} min right after a restart (ready ${f(readyMs, 0)} ms after listening), ${os.cpus().length} cores, Node ${process.version}`,
  );
  console.log(`the upstream alone: p50 ${f(baseline.latency.p50)} p99 ${f(baseline.latency.p99)} ms`);
  console.table(
    minutes.map((m, i) => ({
      minute: i + 1,
      "p50 ms": f(m.latency?.p50),
      "p99 ms": f(m.latency?.p99),
      "+p99 ms": f((m.latency?.p99 ?? NaN) - baseline.latency.p99),
      "max ms": f(m.latency?.max),
      failed: m.errors.total ? `${m.errors.total} ${JSON.stringify(m.errors.byKind)}` : 0,
      "CPU µs/req (+PG)": m.cpuUs ? `${f(m.cpuUs.own, 0)} (+${f(m.cpuUs.children, 0)})` : "-",
      "RSS MB": Math.round(m.rssMb),
    })),
  );
  console.log(
    `achieved ${result.achievedRate}/s, generator lag p99 ${f(result.lag?.p99)} ms; other processes used ${other}% of a core meanwhile`,
  );
  if (PROBE) firstMinuteTail(gw.probeDir, trace);
  const lines = soakVerdicts(minutes, baseline.latency);
  console.log(`\ngateway against issue 30's soak target: ${lines.filter((l) => l.ok).length}/${lines.length} met`);
  for (const l of lines) console.log(`  ${l.text}`);
}

await runBenchmark("soak", main);
