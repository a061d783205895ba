// What stalls the gateway's event loop, recorded inside the gateway process for `BENCH_PROBE=1`
// (docs/performance.md, "Finding the tail"). Loaded with `node --import bench/gateway-probe.mjs`; nothing of it
// is in the gateway's own code.
//
// SIGUSR2 starts a recording, the next SIGUSR2 writes it to $BENCH_PROBE_DIR/probe-<pid>-<n>.json:
//   gc      every GC pause (scavenge, mark-compact, incremental step) with its start and duration
//   pg      every pg query: the synchronous part of the call (serialising and writing it) and its round trip
//   loop    event-loop delay percentiles (1 ms resolution)
// Times are process.hrtime.bigint() in ns (CLOCK_MONOTONIC, the same clock in every process), so they line up
// with the paced generator's per-request trace (bench/paced-load.mjs --trace).
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { PerformanceObserver, constants, monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath } from "node:url";

const dir = process.env.BENCH_PROBE_DIR ?? process.cwd();
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const now = () => process.hrtime.bigint();
// performance.now() (ms since the time origin) → hrtime ns.
const origin = now() - BigInt(Math.round(performance.now() * 1e6));
const GC_KINDS = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: "scavenge",
  [constants.NODE_PERFORMANCE_GC_MAJOR]: "mark-compact",
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: "incremental",
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: "weak-callbacks",
};

let recording = false;
let events = [];
let count = 0;
const delay = monitorEventLoopDelay({ resolution: 1 });

new PerformanceObserver((list) => {
  if (!recording) return;
  for (const e of list.getEntries()) {
    events.push({
      kind: `gc:${GC_KINDS[e.detail?.kind] ?? "other"}`,
      at: String(origin + BigInt(Math.round(e.startTime * 1e6))),
      ms: e.duration,
    });
  }
}).observe({ entryTypes: ["gc"] });

// The gateway's pg: its Pool.query (the request log, lease syncs, the key cache) and Client.query (graphile-worker).
const pg = createRequire(path.join(root, "package.json"))("pg");
for (const [proto, label] of [
  [Object.getPrototypeOf(pg.Pool.prototype), "pool"],
  [pg.Client.prototype, "client"],
]) {
  const original = proto.query;
  proto.query = function probedQuery(config, values, callback) {
    const at = now();
    const result = original.call(this, config, values, callback);
    if (recording) {
      const name = String(typeof config === "string" ? config : (config?.name ?? config?.text ?? "?"))
        .replace(/\s+/g, " ")
        .slice(0, 40);
      events.push({ kind: `pg-call:${name}`, at: String(at), ms: Number(now() - at) / 1e6, via: label });
      if (label === "pool" && typeof result?.then === "function") {
        result.then(
          () => events.push({ kind: `pg-trip:${name}`, at: String(at), ms: Number(now() - at) / 1e6 }),
          () => {},
        );
      }
    }
    return result;
  };
}

const ms = (ns) => Math.round(ns / 1e4) / 100;

process.on("SIGUSR2", () => {
  if (!recording) {
    events = [];
    delay.reset();
    delay.enable();
    recording = true;
    return;
  }
  recording = false;
  delay.disable();
  const loop = { p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)), p999: ms(delay.percentile(99.9)), max: ms(delay.max) };
  const file = path.join(dir, `probe-${process.pid}-${++count}.json`);
  writeFileSync(file, JSON.stringify({ loop, events }));
  process.stderr.write(`gateway-probe: wrote ${file}\n`);
});
