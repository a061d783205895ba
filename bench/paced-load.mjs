// Evenly paced fixed-rate load: request i leaves at start + i/rate, not in per-second bursts (autocannon's
// overallRate fires each second's quota at once and reports whole milliseconds, which hides sub-ms overhead).
//
//   node bench/paced-load.mjs --url http://127.0.0.1:8080/v1/chat/completions --rate 500 --duration 10 \
//     --warmup 2 --header "authorization: Bearer KEY" --body '{"model":"m","messages":[...]}' [--stream] [--json] \
//     [--trace FILE] [--window S]
//
// or `import { runPaced } from "./paced-load.mjs"`.
//
// The schedule lives in a worker thread that sleeps with Atomics.wait (sub-ms, no busy loop stealing a core
// from the servers under test) and computes every deadline from the start time, so lateness never accumulates.
// The main thread only sends and measures; latency runs from the moment the request is handed to undici
// (process.hrtime.bigint), and the lag behind the schedule is reported so a late generator is visible.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { Pool } from "undici";
import { runNode } from "./processes.mjs";

const PACER = `
const { parentPort, workerData } = require("node:worker_threads");
const { start, rate, count } = workerData;
const cell = new Int32Array(new SharedArrayBuffer(4));
for (let i = 0; i < count; i++) {
  const due = start + BigInt(Math.round((i * 1e9) / rate));
  const waitMs = Number(due - process.hrtime.bigint()) / 1e6;
  if (waitMs > 0) Atomics.wait(cell, 0, 0, waitMs);
  parentPort.postMessage(i);
}
parentPort.postMessage(-1);
`;

const OVERHEAD_HEADER = "x-gateway-overhead-ms";

/** Percentiles in ms (3 decimals) of microsecond samples. */
function summarize(samples) {
  if (samples.n === 0) return null;
  const s = samples.subarray(0, samples.n).sort();
  const at = (q) => Math.round(s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]) / 1000;
  return { p50: at(0.5), p90: at(0.9), p99: at(0.99), max: Math.round(s[s.length - 1]) / 1000, n: s.length };
}

/**
 * Sends `rate` POST requests per second to `url` for `warmup` + `duration` seconds; only requests scheduled
 * after the warmup are measured. Resolves with latency (full answer), ttfb (first body byte), lag behind the
 * schedule, the gateway's own overhead header when present, the achieved rate and the errors.
 */
export async function runPaced({
  url,
  rate = 500,
  duration = 10,
  warmup = 2,
  body,
  headers = {},
  stream = false,
  connections,
  trace,
  window,
}) {
  const target = new URL(url);
  const pool = new Pool(target.origin, {
    // Enough sockets to ride out a stall of ~100 ms at this rate without queueing behind busy connections.
    connections: connections ?? Math.max(32, Math.ceil(rate / 10)),
    pipelining: 1,
    keepAliveTimeout: 60_000,
  });
  const payload = Buffer.from(typeof body === "string" ? body : JSON.stringify(body));
  const reqHeaders = { "content-type": "application/json", ...headers, "content-length": String(payload.length) };
  const path = target.pathname + target.search;
  const warmupCount = Math.round(warmup * rate);
  const count = warmupCount + Math.round(duration * rate);

  // Preallocated so the generator's own garbage stays small: its GC pauses would show up as latency.
  const series = () => Object.assign(new Float64Array(count), { n: 0 });
  const latency = series();
  const ttfb = series();
  const lag = series();
  const overhead = series();
  const push = (xs, v) => (xs[xs.n++] = v);
  const errors = { total: 0, byKind: {} };
  // With `window` (seconds): the measured requests also split by the window they were scheduled in, each with its
  // own latency and errors (bench/soak.mjs reads minute by minute).
  const perWindow = window ? Math.round(window * rate) : 0;
  const windows = perWindow
    ? Array.from({ length: Math.ceil((count - warmupCount) / perWindow) }, (_, w) => ({
        latency: Object.assign(new Float64Array(Math.min(perWindow, count - warmupCount - w * perWindow)), { n: 0 }),
        errors: { total: 0, byKind: {} },
      }))
    : null;
  const windowOf = (i) => (windows && i >= warmupCount ? windows[Math.floor((i - warmupCount) / perWindow)] : null);
  // With `trace` (a file): every measured answer as [sent at (hrtime ns, as text), latency µs, TTFB µs], for
  // bench/tail-report.mjs.
  const traced = trace ? [] : null;
  let firstSend = 0n;
  let lastSend = 0n;
  let measuredSent = 0;
  let inFlight = 0;
  let onIdle = null;
  const count1 = (into, kind) => {
    into.total += 1;
    into.byKind[kind] = (into.byKind[kind] ?? 0) + 1;
  };
  const fail = (i, kind) => {
    if (i < warmupCount) return;
    count1(errors, kind);
    const w = windowOf(i);
    if (w) count1(w.errors, kind);
  };
  const settle = () => {
    inFlight -= 1;
    if (inFlight === 0 && onIdle) onIdle();
  };

  const cpuBefore = process.cpuUsage();
  const start = process.hrtime.bigint() + 50_000_000n; // time for the worker to boot before the first deadline
  const fire = (i) => {
    const sent = process.hrtime.bigint();
    const measured = i >= warmupCount;
    if (measured) {
      push(lag, Number(sent - start - BigInt(Math.round((i * 1e9) / rate))) / 1000);
      if (measuredSent === 0) firstSend = sent;
      lastSend = sent;
      measuredSent += 1;
    }
    inFlight += 1;
    let status = 0;
    let first = 0n;
    pool.dispatch(
      { path, method: "POST", headers: reqHeaders, body: payload },
      {
        onRequestStart() {},
        onResponseStart(_controller, statusCode, resHeaders) {
          status = statusCode;
          const own = Number(resHeaders[OVERHEAD_HEADER]);
          if (measured && statusCode < 400 && Number.isFinite(own)) push(overhead, own * 1000);
        },
        onResponseData() {
          if (first === 0n) first = process.hrtime.bigint();
        },
        onResponseEnd() {
          const done = process.hrtime.bigint();
          if (status >= 400) fail(i, `http ${status}`);
          else if (measured) {
            push(latency, Number(done - sent) / 1000);
            const w = windowOf(i);
            if (w) push(w.latency, Number(done - sent) / 1000);
            traced?.push([String(sent), Number(done - sent) / 1000, Number((first || done) - sent) / 1000]);
            push(ttfb, Number((first || done) - sent) / 1000);
          }
          settle();
        },
        onResponseError(_controller, err) {
          fail(i, err.code ?? err.name);
          settle();
        },
      },
    );
  };

  const pacer = new Worker(PACER, { eval: true, workerData: { start, rate, count } });
  await new Promise((resolve, reject) => {
    pacer.on("message", (i) => (i < 0 ? resolve() : fire(i)));
    pacer.on("error", reject);
  });
  await pacer.terminate();
  if (inFlight > 0) {
    const drained = new Promise((resolve) => (onIdle = resolve));
    const giveUp = new Promise((resolve) => setTimeout(resolve, 15_000).unref());
    await Promise.race([drained, giveUp]);
  }
  // Requests still open after the grace period fail here, and count as errors (UND_ERR_DESTROYED).
  await pool.destroy();

  if (traced) writeFileSync(trace, JSON.stringify(traced));
  const span = Number(lastSend - firstSend) / 1e9;
  const cpu = process.cpuUsage(cpuBefore);
  return {
    url,
    stream,
    rate,
    duration,
    sent: measuredSent,
    total: count,
    achievedRate: span > 0 ? Math.round(((measuredSent - 1) / span) * 10) / 10 : 0,
    errors,
    // The generator's own CPU (main thread + pacer), in % of one core: it competes with the servers under test.
    cpuPercent: Math.round(((cpu.user + cpu.system) / 1e4 / (warmup + duration)) * 10) / 10,
    latency: summarize(latency),
    ttfb: summarize(ttfb),
    lag: summarize(lag),
    overhead: summarize(overhead),
    ...(windows ? { windows: windows.map((w) => ({ latency: summarize(w.latency), errors: w.errors })) } : {}),
  };
}

/**
 * runPaced in a process of its own (the generator must not share an event loop with the benchmark's bookkeeping),
 * sending `body` to `url` with `key` as its bearer token; resolves with its result.
 */
export async function runPacedProcess({ url, key, body, rate, duration, warmup, stream = false, window, trace }) {
  const args = [fileURLToPath(import.meta.url), "--json", "--url", url, "--rate", String(rate), "--duration", String(duration)];
  args.push("--warmup", String(warmup), "--header", `authorization: Bearer ${key}`, "--body", body);
  if (stream) args.push("--stream");
  if (window) args.push("--window", String(window));
  if (trace) args.push("--trace", trace);
  return JSON.parse(await runNode("paced-load", args));
}

const fmt = (s) => (s ? `p50 ${s.p50.toFixed(3)}  p90 ${s.p90.toFixed(3)}  p99 ${s.p99.toFixed(3)}  max ${s.max.toFixed(3)} ms` : "-");

export function formatPaced(r) {
  const lines = [
    `${r.url} ${r.stream ? "(stream)" : ""} target ${r.rate}/s, achieved ${r.achievedRate}/s over ${r.duration}s, ${r.sent} sent, generator CPU ${r.cpuPercent}%, ${r.errors.total} errors ${r.errors.total ? JSON.stringify(r.errors.byKind) : ""}`,
    `  latency   ${fmt(r.latency)}`,
    `  ttfb      ${fmt(r.ttfb)}`,
    `  send lag  ${fmt(r.lag)}`,
  ];
  if (r.overhead) lines.push(`  ${OVERHEAD_HEADER} ${fmt(r.overhead)}`);
  return lines.join("\n");
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      url: { type: "string" },
      rate: { type: "string", default: "500" },
      duration: { type: "string", default: "10" },
      warmup: { type: "string", default: "2" },
      connections: { type: "string" },
      body: { type: "string" },
      header: { type: "string", multiple: true, default: [] },
      stream: { type: "boolean", default: false },
      json: { type: "boolean", default: false },
      trace: { type: "string" },
      window: { type: "string" },
    },
  });
  if (!values.url || !values.body) {
    process.stderr.write(
      "usage: node bench/paced-load.mjs --url URL --body JSON|@FILE [--rate N] [--duration S] [--warmup S] [--header 'k: v'] [--stream] [--json] [--trace FILE] [--window S]\n",
    );
    process.exit(2);
  }
  const headers = {};
  for (const h of values.header) {
    const at = h.indexOf(":");
    headers[h.slice(0, at).trim().toLowerCase()] = h.slice(at + 1).trim();
  }
  const raw = values.body.startsWith("@") ? readFileSync(values.body.slice(1), "utf8") : values.body;
  // --stream marks the body as streaming, so one body serves both modes.
  const body = values.stream ? JSON.stringify({ ...JSON.parse(raw), stream: true }) : raw;
  const result = await runPaced({
    url: values.url,
    rate: Number(values.rate),
    duration: Number(values.duration),
    warmup: Number(values.warmup),
    connections: values.connections ? Number(values.connections) : undefined,
    body,
    headers,
    stream: values.stream,
    trace: values.trace,
    window: values.window ? Number(values.window) : undefined,
  });
  process.stdout.write(values.json ? `${JSON.stringify(result)}\n` : `${formatPaced(result)}\n`);
}
