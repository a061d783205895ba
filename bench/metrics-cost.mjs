// What metrics add to one request's CPU, measured alone: the recordings a metered chat request makes (its count,
// the upstream TTFB and duration, a hold and its post) in a loop, with metrics on and off. The full bench
// (`npm run bench` vs `BENCH_METRICS=1 npm run bench`) measures the whole, but its run-to-run spread on a shared
// VM is larger than this; docs/performance.md relates the two. Needs a prior `npm run build`:
//   node bench/metrics-cost.mjs [requests]
import { parseConfig } from "../dist/src/config/load.js";
import { createPrometheusMetrics } from "../dist/src/metrics/prometheus.js";
import { noMetrics } from "../dist/src/metrics/recorders.js";

const requests = Number(process.argv[2] ?? 1_000_000);
const config = parseConfig(
  {
    providers: { main: { protocol: "openai", base_url: "http://127.0.0.1:9/v1" } },
    models: { m1: { kind: "chat", upstream: "m1", targets: ["main"] } },
    metrics: { enabled: true, token: "bench-metrics-token" },
  },
  "bench config",
);

function run(metrics) {
  const account = metrics.ledger.account("daily_allowance");
  const once = () => {
    account.held();
    metrics.upstream.answered("main", 0.0012);
    metrics.upstream.ended("main", 0.0034);
    account.posted(40n, 52n);
    metrics.requests.request("/v1/chat/completions", "m1", "openai", 200);
  };
  for (let i = 0; i < 100_000; i++) once();
  const start = process.cpuUsage();
  for (let i = 0; i < requests; i++) once();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / requests;
}

const off = [];
const on = [];
const prometheus = createPrometheusMetrics(config);
for (let round = 0; round < 3; round++) {
  off.push(run(noMetrics));
  on.push(run(prometheus));
}
const median = (xs) => [...xs].sort((a, b) => a - b)[1];
const text = await prometheus.exposition.scrape();
const counted = /gateway_requests_total\{[^}]*status_class="2xx"[^}]*\} (\d+)/.exec(text)?.[1];
console.log(`metrics off: ${median(off).toFixed(3)} µs of CPU per request (rounds ${off.map((x) => x.toFixed(3)).join(", ")})`);
console.log(`metrics on:  ${median(on).toFixed(3)} µs of CPU per request (rounds ${on.map((x) => x.toFixed(3)).join(", ")})`);
console.log(`requests counted: ${counted} (expected ${3 * (requests + 100_000)})`);
