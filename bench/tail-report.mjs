// Lines up the paced generator's slow requests with what the gateway recorded meanwhile (bench/gateway-probe.mjs),
// on the clock both share. For each request slower than the threshold: the GC pauses and pg calls over 0.5 ms,
// and the pg round trips (PostgreSQL working for the gateway, competing for the same cores) that overlapped it.
// "nothing in-process" means the gateway itself did not stall: the time went to the machine (other processes,
// the mock, the generator, scheduling).
//
//   node bench/tail-report.mjs --probe probe-123-1.json --trace trace.json [--threshold-ms 5] [--ttfb] [--json]
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const STALL_MS = 0.5;

/** A summary of the probe's events and of the slow requests, from the two files' contents. */
export function tailReport(probe, trace, thresholdMs = 5, ttfb = false) {
  const events = probe.events.map((e) => ({
    ...e,
    kind: e.kind.replace(/^(pg-call|pg-trip):(.*)$/, (_, k, n) => `${k}:${n.slice(0, 24)}`),
    at: Number(BigInt(e.at) / 1000n) / 1000,
  }));
  const byKind = {};
  for (const e of events) {
    const k = (byKind[e.kind] ??= { n: 0, totalMs: 0, maxMs: 0, over1ms: 0 });
    k.n++;
    k.totalMs += e.ms;
    k.maxMs = Math.max(k.maxMs, e.ms);
    if (e.ms > 1) k.over1ms++;
  }
  for (const k of Object.values(byKind)) k.totalMs = Math.round(k.totalMs * 10) / 10;
  const requests = trace.map(([sent, latencyUs, ttfbUs]) => ({
    at: Number(BigInt(sent) / 1000n) / 1000,
    ms: (ttfb ? ttfbUs : latencyUs) / 1000,
  }));
  const slow = requests.filter((r) => r.ms > thresholdMs);
  const overlapping = {};
  for (const r of slow) {
    const kinds = new Set();
    for (const e of events) {
      const stall = e.kind.startsWith("gc:") || (e.kind.startsWith("pg-call:") && e.ms > STALL_MS);
      if (!stall && !e.kind.startsWith("pg-trip:")) continue;
      // GC pauses by kind; pg calls and round trips as such.
      if (e.at < r.at + r.ms && e.at + e.ms > r.at) kinds.add(e.kind.startsWith("gc:") ? e.kind : e.kind.split(":")[0]);
    }
    const key = kinds.size ? [...kinds].sort().join(" + ") : "nothing in-process";
    overlapping[key] = (overlapping[key] ?? 0) + 1;
  }
  return {
    loop: probe.loop,
    byKind,
    requests: requests.length,
    slow: slow.length,
    thresholdMs,
    measure: ttfb ? "TTFB" : "latency",
    overlapping,
  };
}

export function formatTailReport(r) {
  const lines = [`  gateway event-loop delay p50 ${r.loop.p50} / p99 ${r.loop.p99} / p99.9 ${r.loop.p999} / max ${r.loop.max} ms`];
  for (const [kind, k] of Object.entries(r.byKind).sort()) {
    if (kind.startsWith("gc:") || k.over1ms > 0 || kind.startsWith("pg-trip:"))
      lines.push(
        `  ${kind.padEnd(36)} ${String(k.n).padStart(5)}× total ${k.totalMs} ms, max ${k.maxMs.toFixed(2)} ms, ${k.over1ms} over 1 ms`,
      );
  }
  lines.push(`  ${r.slow} of ${r.requests} requests with ${r.measure} over ${r.thresholdMs} ms; what overlapped them:`);
  for (const [key, n] of Object.entries(r.overlapping).sort((a, b) => b[1] - a[1])) lines.push(`    ${String(n).padStart(5)}  ${key}`);
  return lines.join("\n");
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({
    options: {
      probe: { type: "string" },
      trace: { type: "string" },
      "threshold-ms": { type: "string", default: "5" },
      ttfb: { type: "boolean", default: false },
      json: { type: "boolean", default: false },
    },
  });
  if (!values.probe || !values.trace) {
    process.stderr.write("usage: node bench/tail-report.mjs --probe FILE --trace FILE [--threshold-ms 5] [--ttfb] [--json]\n");
    process.exit(2);
  }
  const read = (file) => JSON.parse(readFileSync(file, "utf8"));
  const report = tailReport(read(values.probe), read(values.trace), Number(values["threshold-ms"]), values.ttfb);
  process.stdout.write(values.json ? `${JSON.stringify(report)}\n` : `${formatTailReport(report)}\n`);
}
