// npm run bench: what the gateway costs over calling the upstream directly, and how close it comes to the
// fastest Node proxy (bench/bare-proxy.mjs), on the chat path with metering on a real PostgreSQL.
// Targets: direct (the mock upstream), bare (Hono + undici pass-through), gateway (`gateway serve`).
// Each server and each load generator is its own process; rounds interleave the targets so drift of the shared
// machine hits all three alike. docs/performance.md explains the knobs and keeps the results.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { chmod, mkdtemp } from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { request } from "undici";
import { cleanup, registerPostmaster, registerTempDir, runNode, startProcess, startSampler } from "./processes.mjs";
import { formatTailReport, tailReport } from "./tail-report.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const gatewayBin = path.join(root, "bin/gateway");
const autocannonBin = createRequire(import.meta.url).resolve("autocannon");

const QUICK = process.env.BENCH_QUICK === "1";
const SECONDS = Number(process.env.BENCH_SECONDS ?? (QUICK ? 2 : 10));
const WARMUP = QUICK ? 1 : 2;
const RATE = Number(process.env.BENCH_RATE ?? 500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (QUICK ? 1 : 3));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const MOCK_KEY = "bench-mock-key";
// Seconds to wait before each run for other processes to drop under 15% of a core (the bench machine is shared).
const WAIT_QUIET = Number(process.env.BENCH_WAIT_QUIET ?? 0);
const TARGETS = { p50: 1, p99: 5, ttfb: 1.5, ratio: 0.5, rssMb: 200 };
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

let interrupted = false;
for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.once(sig, () => {
    interrupted = true;
    process.stderr.write(`\n${sig}: stopping every benchmark process…\n`);
    void cleanup().then(() => process.exit(130));
  });
}

const log = (line) => process.stderr.write(`${line}\n`);

async function startServers(dataDir) {
  const mock = await startProcess("mock", [gatewayBin, "mock-upstream", "--port", "0", "--api-key", MOCK_KEY], {
    ready: /mock upstream listening on (http:\/\/\S+)/,
  });
  const mockUrl = mock.match[1];
  const bare = await startProcess("bare", [path.join(root, "bench/bare-proxy.mjs"), "--port", "0", "--upstream", mockUrl], {
    ready: /^(http:\/\/\S+)$/m,
  });
  const servers = {
    direct: { url: mockUrl, key: MOCK_KEY, model: "mock-gpt-small", imageModel: "mock-image-large", pid: mock.pid },
    bare: { url: bare.match[1], key: MOCK_KEY, model: "mock-gpt-small", pid: bare.pid },
  };
  try {
    servers.gateway = await startGateway(dataDir, mockUrl);
  } catch (err) {
    servers.gateway = { missing: `gateway: did not start (${err.message.split("\n").slice(0, 3).join(" ")})` };
  }
  return servers;
}

async function startGateway(dataDir, mockUrl) {
  // JSON is YAML; the plan's allowance is large enough that quota never refuses during the run.
  const config = {
    server: { host: "127.0.0.1", port: 0 },
    logging: { level: "warn" },
    providers: { mock: { protocol: "openai", base_url: `${mockUrl}/v1`, api_key: MOCK_KEY } },
    models: {
      "bench-chat": { kind: "chat", upstream: "mock-gpt-small", targets: ["mock"] },
      "bench-image": { kind: "image", upstream: "mock-image-large", targets: ["mock"] },
    },
    plans: { bench: { daily_tokens: 1e15, context_limit: 128_000 } },
    default_plan: "bench",
    ...(METRICS ? { metrics: { enabled: true, token: METRICS_TOKEN } } : {}),
  };
  const configFile = path.join(dataDir, "gateway.yaml");
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  const pgDir = path.join(dataDir, "db");
  registerPostmaster(path.join(pgDir, "pg", "postmaster.pid"));
  // The worker runs, as in production.
  const probeArgs = PROBE ? ["--import", path.join(root, "bench/gateway-probe.mjs")] : [];
  const gw = await startProcess(
    "gateway",
    [...probeArgs, gatewayBin, "serve", "--config", configFile, "--port", "0", "--data-dir", pgDir],
    {
      ready: /gateway listening on (http:\/\/\S+)/,
      timeoutMs: 180_000,
      env: { ...process.env, BENCH_PROBE_DIR: dataDir },
    },
  );
  const common = ["--data-dir", pgDir, "--config", configFile, "--json"];
  await runNode("users create", [
    gatewayBin,
    "users",
    "create",
    "--email",
    "bench@example.com",
    "--password",
    "bench-password-2026",
    ...common,
  ]);
  const { key } = JSON.parse(await runNode("keys create", [gatewayBin, "keys", "create", "--user", "bench@example.com", ...common]));
  return { url: gw.match[1], key, model: "bench-chat", imageModel: "bench-image", pid: gw.pid, probeDir: PROBE ? dataDir : undefined };
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
async function probe(name, t) {
  const res = await request(`${t.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${t.key}` },
    body: chatBody(t.model, false),
  });
  const text = await res.body.text();
  if (res.statusCode === 200) return undefined;
  if (res.statusCode === 404) return `${name}: chat route missing (404)`;
  let message = text.slice(0, 200);
  try {
    message = JSON.parse(text).error?.message ?? message;
  } catch {
    // not JSON: keep the raw start of the body
  }
  return `${name}: chat answered ${res.statusCode} (${message})`;
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

async function paced(t, stream) {
  const trace = t.probeDir && path.join(t.probeDir, `trace-${Date.now()}.json`);
  if (trace) process.kill(t.pid, "SIGUSR2");
  const out = await runNode("paced-load", [
    path.join(root, "bench/paced-load.mjs"),
    "--json",
    "--url",
    `${t.url}/v1/chat/completions`,
    "--rate",
    String(RATE),
    "--duration",
    String(SECONDS),
    "--warmup",
    String(WARMUP),
    "--header",
    `authorization: Bearer ${t.key}`,
    "--body",
    chatBody(t.model, stream),
    ...(stream ? ["--stream"] : []),
    ...(trace ? ["--trace", trace] : []),
  ]);
  const result = JSON.parse(out);
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
        TARGETS.p99,
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

// Median over rounds: one round hit by a busy neighbour should not move the result.
const median = (xs) => {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (!v.length) return NaN;
  return v.length % 2 ? v[(v.length - 1) / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};
const f = (x, d = 3) => (Number.isFinite(x) ? x.toFixed(d) : "-");
const signed = (x) => (x >= 0 ? `+${f(x)}` : f(x));

async function main() {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "gateway-bench-"));
  registerTempDir(dataDir);
  await chmod(dataDir, 0o755); // embedded PostgreSQL runs as the postgres user when we are root
  log(`starting mock upstream, bare proxy and gateway (embedded PostgreSQL unless DATABASE_URL is set)…`);
  const servers = await startServers(dataDir);
  const active = {};
  const missing = [];
  for (const [name, t] of Object.entries(servers)) {
    const problem = t.missing ?? (await probe(name, t).catch((err) => `${name}: ${err.message}`));
    if (problem && name !== "gateway") throw new Error(problem);
    if (problem) missing.push(problem);
    else active[name] = t;
  }
  for (const line of missing) log(line);

  const pids = Object.fromEntries(Object.entries(active).map(([n, t]) => [n, t.pid]));
  const res = Object.fromEntries(Object.keys(active).map((n) => [n, { max: [], json: [], stream: [], image: [], other: [] }]));
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
  const maxRss = Object.fromEntries(Object.keys(pids).map((n) => [n, 0]));
  const keep = (name, kind, [r, s]) => {
    // CPU per request of the target's own process (and, for the gateway, of PostgreSQL under it), in µs.
    r.cpuUs = { own: (s.cpuMs[name].own * 1000) / r.total, children: (s.cpuMs[name].children * 1000) / r.total };
    res[name][kind].push(r);
    res[name].other.push(s.otherCpuPercent);
    for (const [n, mb] of Object.entries(s.maxRss)) maxRss[n] = Math.max(maxRss[n], mb);
    const errs = typeof r.errors === "number" ? r.errors : r.errors.total;
    const what =
      kind === "max" || kind === "image"
        ? `${Math.round(r.rps)} req/s, p50 ${r.p50} ms`
        : `${kind === "stream" ? "ttfb" : "latency"} p50 ${f((kind === "stream" ? r.ttfb : r.latency)?.p50)} ms`;
    log(
      `  ${name.padEnd(7)} ${kind.padEnd(6)} ${what}, CPU ${f(r.cpuUs.own, 0)} µs/req, other load ${s.otherCpuPercent}%${errs ? `, ${errs} errors ${r.errors.byKind ? JSON.stringify(r.errors.byKind) : ""}` : ""}`,
    );
  };

  log(`warming up (autocannon ${WARMUP}s per target)…`);
  for (const t of Object.values(active)) await maxThroughput(t, WARMUP);
  const names = Object.keys(active);
  for (let round = 1; round <= ROUNDS; round++) {
    log(`round ${round}/${ROUNDS}: max throughput (autocannon, ${CONNECTIONS} connections, ${SECONDS}s)`);
    for (const n of names) keep(n, "max", await sampleDuring(() => maxThroughput(active[n], SECONDS)));
    log(`round ${round}/${ROUNDS}: ${RATE} req/s paced, JSON then streaming (${WARMUP}s warmup + ${SECONDS}s)`);
    for (const n of names) keep(n, "json", await sampleDuring(() => paced(active[n], false)));
    for (const n of names) keep(n, "stream", await sampleDuring(() => paced(active[n], true)));
    if (!IMAGES) continue;
    log(`round ${round}/${ROUNDS}: image generation, b64 of a 1 MiB PNG (autocannon, ${IMAGE_CONNECTIONS} connections, ${SECONDS}s)`);
    for (const n of names.filter((name) => active[name].imageModel))
      keep(n, "image", await sampleDuring(() => maxThroughput(active[n], SECONDS, true)));
  }
  const metricsLines = METRICS && active.gateway ? await metricsSummary(active.gateway) : [];
  report(res, maxRss, missing);
  for (const line of metricsLines) console.log(line);
}

function report(res, maxRss, missing) {
  const s = Object.fromEntries(
    Object.entries(res).map(([n, r]) => [
      n,
      {
        rps: median(r.max.map((x) => x.rps)),
        maxP50: median(r.max.map((x) => x.p50)),
        maxP99: median(r.max.map((x) => x.p99)),
        p50: median(r.json.map((x) => x.latency?.p50 ?? NaN)),
        p99: median(r.json.map((x) => x.latency?.p99 ?? NaN)),
        ttfb50: median(r.stream.map((x) => x.ttfb?.p50 ?? NaN)),
        ttfb99: median(r.stream.map((x) => x.ttfb?.p99 ?? NaN)),
        cpuMax: median(r.max.map((x) => x.cpuUs.own)),
        cpuJson: median(r.json.map((x) => x.cpuUs.own)),
        cpuStream: median(r.stream.map((x) => x.cpuUs.own)),
        pgJson: median(r.json.map((x) => x.cpuUs.children)),
        own50: median(r.json.filter((x) => x.overhead).map((x) => x.overhead.p50)),
        own99: median(r.json.filter((x) => x.overhead).map((x) => x.overhead.p99)),
        rate: median([...r.json, ...r.stream].map((x) => x.achievedRate)),
        lag99: Math.max(...[...r.json, ...r.stream].map((x) => x.lag?.p99 ?? 0)),
        errors: r.max.reduce((a, x) => a + x.errors, 0) + [...r.json, ...r.stream].reduce((a, x) => a + x.errors.total, 0),
        other: Math.max(...r.other),
      },
    ]),
  );
  const d = s.direct;
  console.log(
    `\nchat completions, ${os.cpus().length} cores, Node ${process.version}; ${ROUNDS} interleaved round(s) of ${SECONDS}s per run` +
      (METRICS ? "; gateway metrics on (BENCH_METRICS=1)" : ""),
  );
  console.log(`max: autocannon, ${CONNECTIONS} connections (whole-ms percentiles); paced: ${RATE} req/s evenly spaced (µs timer)`);
  const rows = Object.fromEntries(
    Object.entries(s).map(([n, x]) => [
      n,
      {
        "max rps": Math.round(x.rps),
        "max p50/p99 ms": `${x.maxP50}/${x.maxP99}`,
        "json p50 ms": f(x.p50),
        "json p99 ms": f(x.p99),
        "stream ttfb p50 ms": f(x.ttfb50),
        "ttfb p99 ms": f(x.ttfb99),
        "achieved /s": f(x.rate, 1),
        "CPU µs/req max/json/stream": `${f(x.cpuMax, 0)}/${f(x.cpuJson, 0)}/${f(x.cpuStream, 0)}`,
        "max RSS MB": Math.round(maxRss[n]),
        errors: x.errors,
        "other CPU %": x.other,
      },
    ]),
  );
  console.table(rows);
  const verdicts = [];
  for (const n of ["bare", "gateway"]) {
    const x = s[n];
    if (!x) continue;
    const over50 = x.p50 - d.p50;
    const over99 = x.p99 - d.p99;
    const overTtfb = x.ttfb50 - d.ttfb50;
    const ratio = x.rps / s.bare.rps;
    const mark = (ok) => (ok ? "✓" : "✗");
    const parts = [
      `p50 ${signed(over50)} ms ${mark(over50 <= TARGETS.p50)}`,
      `p99 ${signed(over99)} ms ${mark(over99 <= TARGETS.p99)}`,
      `ttfb p50 ${signed(overTtfb)} ms ${mark(overTtfb <= TARGETS.ttfb)}`,
      n === "bare" ? `throughput ${f(x.rps / d.rps, 2)}× direct` : `throughput ${f(ratio, 2)}× bare ${mark(ratio >= TARGETS.ratio)}`,
      `RSS ${Math.round(maxRss[n])} MB ${mark(maxRss[n] <= TARGETS.rssMb)}`,
    ];
    parts.push(`CPU ${f(x.cpuJson, 0)} µs/req${n === "gateway" ? ` + PostgreSQL ${f(x.pgJson, 0)}` : ""} (mock ${f(d.cpuJson, 0)})`);
    if (Number.isFinite(x.own50)) parts.push(`own overhead header p50 ${f(x.own50)} / p99 ${f(x.own99)} ms`);
    verdicts.push(`${n.padEnd(8)} ${parts.join(" · ")}`);
  }
  for (const line of missing) verdicts.push(`${line} (no gateway numbers)`);
  const images = Object.fromEntries(
    Object.entries(res)
      .filter(([, r]) => r.image.length > 0)
      .map(([n, r]) => [
        n,
        {
          rps: median(r.image.map((x) => x.rps)),
          p50: median(r.image.map((x) => x.p50)),
          p99: median(r.image.map((x) => x.p99)),
          cpu: median(r.image.map((x) => x.cpuUs.own)),
        },
      ]),
  );
  if (images.direct && images.gateway) {
    const [di, gi] = [images.direct, images.gateway];
    verdicts.push(
      `images   b64 of a 1 MiB PNG, ${IMAGE_CONNECTIONS} connections: gateway ${Math.round(gi.rps)} req/s, p50 ${gi.p50} ms (${signed(gi.p50 - di.p50)} over direct), ` +
        `p99 ${gi.p99} ms (${signed(gi.p99 - di.p99)}) · CPU ${f(gi.cpu, 0)} µs/req (mock ${f(di.cpu, 0)})`,
    );
  }
  console.log(
    `\nover direct (targets: p50 ≤ ${TARGETS.p50} ms, p99 ≤ ${TARGETS.p99} ms, stream ttfb p50 ≤ ${TARGETS.ttfb} ms, ` +
      `gateway ≥ ${TARGETS.ratio * 100}% of bare throughput, RSS ≤ ${TARGETS.rssMb} MB)`,
  );
  for (const line of verdicts) console.log(line);
  const noisy = Object.values(s).some((x) => x.other > 20);
  // This VM wakes a sleeping thread 0.1-0.2 ms late at p50 and 1-4 ms late at p99 even when idle; only more
  // than that means the generator itself was starved.
  const lagging = Object.values(s).some((x) => x.lag99 > 5);
  if (noisy) console.log("note: other processes used > 20% of a core during some runs; latency tails are not trustworthy");
  if (lagging) console.log("note: the paced generator ran > 5 ms behind schedule at p99 in some runs (machine busy)");
  if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify({ summary: s, maxRss, missing, raw: res }, null, 2));
}

try {
  await main();
} catch (err) {
  process.exitCode = 1;
  if (!interrupted) log(`bench failed: ${err.message}`);
} finally {
  await cleanup();
}
