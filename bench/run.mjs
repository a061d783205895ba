// npm run bench: what the gateway costs over calling the upstream directly, and how close it comes to the
// fastest Node proxy (bench/bare-proxy.mjs), on the chat path with metering on a real PostgreSQL.
// Targets: direct (the mock upstream), bare (Hono + undici pass-through), gateway (`gateway serve`).
// Each server and each load generator is its own process; rounds interleave the targets so drift of the shared
// machine hits all three alike. docs/performance.md explains the knobs and keeps the results.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { request } from "undici";
import { prepareRef } from "./against.mjs";
import { runPacedProcess } from "./paced-load.mjs";
import { benchDir, startGateway, startMock } from "./gateway-server.mjs";
import { runBenchmark, runNode, startProcess, startSampler } from "./processes.mjs";
import { formatTailReport, tailReport } from "./tail-report.mjs";
import { compareBuilds, formatComparison, summarize, verdicts } from "./verdict.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const autocannonBin = createRequire(import.meta.url).resolve("autocannon");

const QUICK = process.env.BENCH_QUICK === "1";
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 2 : 10));
const WARMUP = QUICK ? 1 : 2;
// The paced JSON runs, one per rate; streams run at the first. BENCH_RATE (one rate) is kept for older scripts.
const RATES = (process.env.BENCH_RATES ?? process.env.BENCH_RATE ?? "500,1000,2000").split(",").map(Number);
const STREAM_RATE = RATES[0];
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 1 : 3));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const MOCK_KEY = "bench-mock-key";
// Seconds to wait before each run for other processes to drop under 15% of a core (the bench machine is shared).
const WAIT_QUIET = Number(process.env.BENCH_WAIT_QUIET ?? 0);
// What counts as a slow request in the probe's tail report.
const SLOW_MS = 5;
const { values: args } = parseArgs({ options: { against: { type: "string" } } });
// Records GC pauses and pg calls inside the gateway during its paced runs and reports what its slow requests
// overlapped (bench/gateway-probe.mjs, bench/tail-report.mjs). The probe costs the gateway a little CPU.
const PROBE = process.env.BENCH_PROBE === "1";
// The gateway with GET /metrics on (token on the main address), scraped once at the end of the run, so a run with
// and one without show what recording costs (docs/performance.md, "Metrics on and off").
const METRICS = process.env.BENCH_METRICS === "1";
const METRICS_TOKEN = "bench-metrics-token-0123456789";

// The image scenario: b64 delivery of a 1 MiB PNG (the mock's LARGE_IMAGE_MODEL), direct and through the gateway,
// which decodes, checks and sniffs every image before it answers (docs/performance.md, "Images").
const IMAGE_CONNECTIONS = Number(process.env.BENCH_IMAGE_CONNECTIONS ?? 4);
// BENCH_IMAGES=0 leaves the image rounds out: their megabyte bodies grow the gateway's heap, which chat-only
// comparisons with older runs should not carry.
const IMAGES = process.env.BENCH_IMAGES !== "0";
const imageBody = (model) => JSON.stringify({ model, prompt: "a benchmark picture", response_format: "b64_json" });

const chatBody = (model, stream) =>
  JSON.stringify({ model, messages: [{ role: "user", content: "Say hello" }], max_tokens: 16, ...(stream ? { stream: true } : {}) });

const log = (line) => process.stderr.write(`${line}\n`);

async function startServers(dataDir, ref) {
  const mock = await startMock(MOCK_KEY);
  const mockUrl = mock.match[1];
  const bare = await startProcess("bare", [path.join(root, "bench/bare-proxy.mjs"), "--port", "0", "--upstream", mockUrl], {
    ready: /^(http:\/\/\S+)$/m,
  });
  const servers = {
    direct: { url: mockUrl, key: MOCK_KEY, model: "mock-gpt-small", imageModel: "mock-image-large", pid: mock.pid },
    bare: { url: bare.match[1], key: MOCK_KEY, model: "mock-gpt-small", pid: bare.pid },
  };
  const gateways = { gateway: root, ...(ref ? { [`gateway@${ref.label}`]: ref.dir } : {}) };
  for (const [name, dir] of Object.entries(gateways)) {
    try {
      servers[name] = await startGateway(path.join(dataDir, name.replace(/[^\w.-]/g, "_")), mockUrl, path.join(dir, "bin/gateway"), {
        mockKey: MOCK_KEY,
        metricsToken: METRICS ? METRICS_TOKEN : undefined,
        probe: PROBE,
      });
    } catch (err) {
      servers[name] = { missing: `${name}: did not start (${err.message.split("\n").slice(0, 3).join(" ")})` };
    }
  }
  return servers;
}

/** The sum of the samples of `name` (whose labels include `labels`) in a Prometheus text exposition. */
function sampleSum(text, name, labels = {}) {
  let sum = 0;
  for (const line of text.split("\n")) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const got = Object.fromEntries([...(match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([k, v]) => got[k] === v)) sum += Number(match[3]);
  }
  return sum;
}

/** Scrapes the gateway's /metrics once and returns a few counters as lines, so one can see them move. */
async function metricsSummary(t) {
  const res = await request(`${t.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
  const text = await res.body.text();
  if (res.statusCode !== 200) return [`metrics: GET /metrics answered ${res.statusCode}`];
  const chat = { route: "/v1/chat/completions" };
  const n = (name, labels) => sampleSum(text, name, labels).toLocaleString("en-US");
  return [
    "\ngateway metrics at the end of the run (GET /metrics):",
    `  gateway_requests_total ${n("gateway_requests_total")} (chat 2xx ${n("gateway_requests_total", { ...chat, status_class: "2xx" })}, ` +
      `4xx ${n("gateway_requests_total", { status_class: "4xx" })}, 5xx ${n("gateway_requests_total", { status_class: "5xx" })})`,
    `  gateway_ledger_holds_total ${n("gateway_ledger_holds_total")}, posts ${n("gateway_ledger_posts_total")}, ` +
      `voids ${n("gateway_ledger_voids_total")}, overshoots ${n("gateway_ledger_overshoots_total")}`,
    `  gateway_upstream_duration_seconds_count ${n("gateway_upstream_duration_seconds_count")}, ` +
      `fallbacks ${n("gateway_upstream_fallbacks_total")}, lease syncs ${n("gateway_ledger_lease_sync_duration_seconds_count")}`,
    `  gateway_request_log_dropped_rows_total ${n("gateway_request_log_dropped_rows_total")}, ` +
      `settlements unsynced ${n("gateway_ledger_settlements_unsynced")}`,
  ];
}

/** One request per target first, so a missing route is one clear line rather than a run full of errors. */
/**
 * One request per target first, so a missing route is one clear line rather than a run full of errors. Returns
 * the problem with its chat route, if any; a target whose image route does not answer 200 (a build older than the
 * media routes) loses its image model, so that it sits the image rounds out instead of counting refusals.
 */
async function probe(name, t) {
  const chat = await probeRoute(name, t, "chat/completions", chatBody(t.model, false));
  if (chat || !IMAGES || !t.imageModel) return chat;
  const image = await probeRoute(name, t, "images/generations", imageBody(t.imageModel));
  if (image) {
    log(`${image}: no image rounds for it`);
    t.imageModel = undefined;
  }
  return undefined;
}

async function probeRoute(name, t, route, body) {
  const res = await request(`${t.url}/v1/${route}`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${t.key}` },
    body,
  });
  const text = await res.body.text();
  if (res.statusCode === 200) return undefined;
  if (res.statusCode === 404) return `${name}: ${route} route missing (404)`;
  let message = text.slice(0, 200);
  try {
    message = JSON.parse(text).error?.message ?? message;
  } catch {
    // not JSON: keep the raw start of the body
  }
  return `${name}: ${route} answered ${res.statusCode} (${message})`;
}

async function maxThroughput(t, seconds, image = false) {
  const out = await runNode("autocannon", [
    autocannonBin,
    "-j",
    "-n",
    "-c",
    String(image ? IMAGE_CONNECTIONS : CONNECTIONS),
    "-d",
    String(seconds),
    "-m",
    "POST",
    "-H",
    "content-type=application/json",
    "-H",
    `authorization=Bearer ${t.key}`,
    "-b",
    image ? imageBody(t.imageModel) : chatBody(t.model, false),
    `${t.url}/v1/${image ? "images/generations" : "chat/completions"}`,
  ]);
  const r = JSON.parse(out.trim().split("\n").at(-1));
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts + r.non2xx,
    total: r.requests.total,
  };
}

async function paced(t, rate, stream) {
  const trace = t.probeDir && path.join(t.probeDir, `trace-${Date.now()}.json`);
  if (trace) process.kill(t.pid, "SIGUSR2");
  const result = await runPacedProcess({
    url: `${t.url}/v1/chat/completions`,
    key: t.key,
    body: chatBody(t.model, stream),
    rate,
    duration: SECONDS,
    warmup: WARMUP,
    stream,
    trace,
  });
  if (trace) result.tail = await probeReport(t, trace, stream);
  return result;
}

/** Stops the gateway probe's recording and lines it up with the run's trace. */
async function probeReport(t, trace, stream) {
  const before = new Set(readdirSync(t.probeDir));
  process.kill(t.pid, "SIGUSR2");
  for (let waited = 0; waited < 10_000; waited += 100) {
    const written = readdirSync(t.probeDir).find((f) => f.startsWith(`probe-${t.pid}-`) && !before.has(f));
    if (written) {
      await new Promise((r) => setTimeout(r, 200)); // let the write finish
      const report = tailReport(
        JSON.parse(readFileSync(path.join(t.probeDir, written), "utf8")),
        JSON.parse(readFileSync(trace, "utf8")),
        SLOW_MS,
        stream,
      );
      log(formatTailReport(report));
      return report;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  log("  (gateway probe wrote nothing)");
  return undefined;
}

const f = (x, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : "-");

async function main() {
  const ref = args.against ? prepareRef(root, args.against, log) : undefined;
  const dataDir = await benchDir("gateway-bench-");
  log(`starting mock upstream, bare proxy and gateway${ref ? "s" : ""} (embedded PostgreSQL unless DATABASE_URL is set)…`);
  const servers = await startServers(dataDir, ref);
  const active = {};
  const missing = [];
  for (const [name, t] of Object.entries(servers)) {
    const problem = t.missing ?? (await probe(name, t).catch((err) => `${name}: ${err.message}`));
    if (problem && !name.startsWith("gateway")) throw new Error(problem);
    if (problem) missing.push(problem);
    else active[name] = t;
  }
  for (const line of missing) log(line);

  const pids = Object.fromEntries(Object.entries(active).map(([n, t]) => [n, t.pid]));
  const res = Object.fromEntries(
    Object.keys(active).map((n) => [n, { max: [], json: Object.fromEntries(RATES.map((r) => [r, []])), stream: [], image: [], other: [] }]),
  );
  const sampleDuring = async (fn) => {
    for (const until = Date.now() + WAIT_QUIET * 1000; Date.now() < until;) {
      const probeLoad = startSampler({});
      await new Promise((r) => setTimeout(r, 1000));
      if (probeLoad().otherCpuPercent < 15) break;
    }
    const stopSampler = startSampler(pids);
    try {
      return [await fn(), stopSampler()];
    } catch (err) {
      stopSampler();
      throw err;
    }
  };
  // Peak RSS of each target over the chat runs, and over every run (the image runs' bodies grow the heap).
  const maxRss = { chat: {}, all: {} };
  const keep = (name, kind, [r, s], rate) => {
    // CPU per request of the target's own process (and, for a gateway, of PostgreSQL under it), in µs.
    r.cpuUs = { own: (s.cpuMs[name].own * 1000) / r.total, children: (s.cpuMs[name].children * 1000) / r.total };
    (kind === "json" ? res[name].json[rate] : res[name][kind]).push(r);
    res[name].other.push(s.otherCpuPercent);
    for (const [n, mb] of Object.entries(s.maxRss)) {
      maxRss.all[n] = Math.max(maxRss.all[n] ?? 0, mb);
      if (kind !== "image") maxRss.chat[n] = Math.max(maxRss.chat[n] ?? 0, mb);
    }
    const errs = typeof r.errors === "number" ? r.errors : r.errors.total;
    const what =
      kind === "max" || kind === "image"
        ? `${Math.round(r.rps)} req/s, p50 ${r.p50} ms`
        : `${kind === "stream" ? "ttfb" : `@${rate}/s latency`} p50 ${f((kind === "stream" ? r.ttfb : r.latency)?.p50)} p99 ${f((kind === "stream" ? r.ttfb : r.latency)?.p99)} ms`;
    log(
      `  ${name.padEnd(15)} ${kind.padEnd(6)} ${what}, CPU ${f(r.cpuUs.own, 0)} µs/req${r.cpuUs.children ? ` + ${f(r.cpuUs.children, 0)} below` : ""}, other load ${s.otherCpuPercent}%` +
        `${errs ? `, ${errs} errors ${r.errors.byKind ? JSON.stringify(r.errors.byKind) : ""}` : ""}`,
    );
  };

  log(`warming up (autocannon ${WARMUP}s per target)…`);
  for (const t of Object.values(active)) await maxThroughput(t, WARMUP);
  const names = Object.keys(active);
  for (let round = 1; round <= ROUNDS; round++) {
    log(`round ${round}/${ROUNDS}: max throughput (autocannon, ${CONNECTIONS} connections, ${SECONDS}s)`);
    for (const n of names) keep(n, "max", await sampleDuring(() => maxThroughput(active[n], SECONDS)));
    for (const rate of RATES) {
      log(`round ${round}/${ROUNDS}: ${rate} req/s paced JSON (${WARMUP}s warmup + ${SECONDS}s)`);
      for (const n of names) keep(n, "json", await sampleDuring(() => paced(active[n], rate, false)), rate);
    }
    log(`round ${round}/${ROUNDS}: ${STREAM_RATE} req/s paced streams (${WARMUP}s warmup + ${SECONDS}s)`);
    for (const n of names) keep(n, "stream", await sampleDuring(() => paced(active[n], STREAM_RATE, true)));
  }
  // After every chat round: the image runs' megabyte bodies grow a gateway's heap for the rest of its life, which
  // the chat runs' figures (their RSS above all) must not carry.
  for (let round = 1; IMAGES && round <= ROUNDS; round++) {
    log(`images ${round}/${ROUNDS}: b64 of a 1 MiB PNG (autocannon, ${IMAGE_CONNECTIONS} connections, ${SECONDS}s)`);
    for (const n of names.filter((name) => active[name].imageModel))
      keep(n, "image", await sampleDuring(() => maxThroughput(active[n], SECONDS, true)));
  }
  const metricsLines = METRICS && active.gateway ? await metricsSummary(active.gateway) : [];
  report(res, maxRss, missing, ref);
  for (const line of metricsLines) console.log(line);
}

function report(res, maxRss, missing, ref) {
  const s = Object.fromEntries(Object.entries(res).map(([n, r]) => [n, summarize(r)]));
  console.log(
    `\nchat completions, ${os.cpus().length} cores, Node ${process.version}; ${ROUNDS} interleaved round(s) of ${SECONDS}s per run` +
      (METRICS ? "; gateway metrics on (BENCH_METRICS=1)" : ""),
  );
  console.log(
    `max: autocannon, ${CONNECTIONS} connections (whole-ms percentiles); paced: ${RATES.join(", ")} req/s evenly spaced (µs timer), streams at ${STREAM_RATE}/s`,
  );
  const rows = Object.fromEntries(
    Object.entries(s).map(([n, x]) => [
      n,
      {
        "max rps": Math.round(x.rps),
        "max p50/p99 ms": `${x.maxP50}/${x.maxP99}`,
        ...Object.fromEntries(RATES.map((rate) => [`@${rate} p50/p99 ms`, `${f(x.at[rate]?.p50)}/${f(x.at[rate]?.p99)}`])),
        "stream ttfb p50/p99": `${f(x.ttfb50)}/${f(x.ttfb99)}`,
        [`CPU µs/req max/@${RATES[0]}/stream`]: `${f(x.cpuMax, 0)}/${f(x.at[RATES[0]]?.cpu, 0)}/${f(x.cpuStream, 0)}`,
        [`PG µs/req max/@${RATES[0]}`]: x.pgMax ? `${f(x.pgMax, 0)}/${f(x.at[RATES[0]]?.pg, 0)}` : "",
        "RSS MB chat/all": `${Math.round(maxRss.chat[n] ?? 0)}/${Math.round(maxRss.all[n] ?? 0)}`,
        errors: x.errors,
        "other CPU %": x.other,
      },
    ]),
  );
  console.table(rows);
  const images = s.direct.image;
  if (images) {
    for (const [n, x] of Object.entries(s).filter(([name, x]) => name !== "direct" && x.image))
      console.log(
        `images, b64 of a 1 MiB PNG, ${IMAGE_CONNECTIONS} connections: ${n} ${Math.round(x.image.rps)} req/s, p50 ${x.image.p50} ms ` +
          `(direct ${images.p50}), p99 ${x.image.p99} ms (direct ${images.p99}), CPU ${f(x.image.cpu, 0)} µs/image (mock ${f(images.cpu, 0)})`,
      );
  }
  const gateways = Object.keys(s).filter((n) => n.startsWith("gateway"));
  for (const n of gateways) {
    const lines = verdicts(s, n, { chat: maxRss.chat[n] ?? 0, image: maxRss.all[n] ?? 0 });
    const met = lines.filter((l) => l.ok).length;
    console.log(`\n${n} against issue 30's targets (relative to the bare proxy of this run): ${met}/${lines.length} met`);
    for (const l of lines) console.log(`  ${l.text}`);
    const own = s[n].at[RATES[0]];
    if (Number.isFinite(own?.own50))
      console.log(
        `  (own overhead header @${RATES[0]}/s: p50 ${f(own.own50)} / p99 ${f(own.own99)} ms; PostgreSQL ${f(own.pg, 0)} µs/req)`,
      );
  }
  for (const line of missing) console.log(`${line} (no numbers)`);
  if (ref && res[`gateway@${ref.label}`] && res.gateway) {
    for (const line of formatComparison(compareBuilds(res, "gateway", `gateway@${ref.label}`), "working tree", ref.label))
      console.log(line);
  }
  const noisy = Object.values(s).some((x) => x.other > 20);
  // This VM wakes a sleeping thread 0.1-0.2 ms late at p50 and 1-4 ms late at p99 even when idle; only more
  // than that means the generator itself was starved.
  const lagging = Object.values(s).some((x) => x.lag99 > 5);
  if (noisy) console.log("note: other processes used > 20% of a core during some runs; latency tails are not trustworthy");
  if (lagging) console.log("note: the paced generator ran > 5 ms behind schedule at p99 in some runs (machine busy)");
  if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify({ summary: s, maxRss, missing, raw: res }, null, 2));
}

await runBenchmark("bench", main);
