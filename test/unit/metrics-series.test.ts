import { Counter, Histogram, Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { counterFamily, histogramFamily } from "../../src/metrics/series.js";

// The families of series.ts must expose exactly what prom-client's own Counter and Histogram expose for the same
// recordings: dashboards and the metrics tests read the text, not the implementation.

const BUCKETS = [0.001, 0.01, 0.1, 1];

/** Random label values and observations, the same for both registries. */
function recordings(seed: number) {
  let x = seed;
  const next = () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  return Array.from({ length: 500 }, () => ({
    provider: ["a", "b", "c"][Math.floor(next() * 3)]!,
    cause: ["timeout", "status_5xx"][Math.floor(next() * 2)]!,
    // Bounds themselves, values between, and above every bound.
    seconds: next() < 0.2 ? BUCKETS[Math.floor(next() * BUCKETS.length)]! : next() * 2,
    by: Math.floor(next() * 4),
  }));
}

describe("metric series", () => {
  it("expose the text prom-client's Counter and Histogram expose for the same recordings", async () => {
    const theirs = new Registry();
    const ours = new Registry();
    const counter = new Counter({ name: "t_calls_total", help: "Calls.", labelNames: ["provider", "cause"], registers: [theirs] });
    const histogram = new Histogram({
      name: "t_seconds",
      help: "Seconds.",
      labelNames: ["provider"],
      buckets: BUCKETS,
      registers: [theirs],
    });
    const calls = counterFamily(ours, { name: "t_calls_total", help: "Calls.", labelNames: ["provider", "cause"] });
    const seconds = histogramFamily(ours, { name: "t_seconds", help: "Seconds.", labelNames: ["provider"], buckets: BUCKETS });
    for (const r of recordings(7)) {
      counter.labels(r.provider, r.cause).inc(r.by);
      calls(r.provider, r.cause).inc(r.by);
      histogram.labels(r.provider).observe(r.seconds);
      seconds(r.provider).observe(r.seconds);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.metrics()).toContain('t_seconds_bucket{le="+Inf",provider="a"}');
  });

  it("show a series from its first recording, an inc(0) included, and never one only bound", async () => {
    const registry = new Registry();
    const calls = counterFamily(registry, { name: "t_total", help: "T.", labelNames: ["what"] });
    const seconds = histogramFamily(registry, { name: "t_seconds", help: "S.", labelNames: ["what"], buckets: BUCKETS });
    const zero = calls("zero");
    calls("bound");
    seconds("bound");
    zero.inc(0);
    const text = await registry.metrics();
    expect(text).toContain('t_total{what="zero"} 0');
    expect(text).not.toContain('what="bound"');
    expect(calls("zero")).toBe(zero);
  });

  it("refuses label values that do not match the label names", () => {
    const calls = counterFamily(new Registry(), { name: "t_total", help: "T.", labelNames: ["a", "b"] });
    expect(() => calls("only-one")).toThrow(/expected 2 label values, got 1/);
  });
});
