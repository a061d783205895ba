import { register as globalRegistry } from "prom-client";
import { describe, expect, it } from "vitest";
import { boundedLabel, fallbackCause, publicModelIds, statusClassIndex, STATUS_CLASSES } from "../../src/metrics/labels.js";
import { createPrometheusMetrics } from "../../src/metrics/prometheus.js";
import { noMetrics, type ScrapeSources } from "../../src/metrics/recorders.js";
import { testConfig } from "../helpers/gateway-app.js";
import { parsePrometheus, sample } from "../helpers/prometheus-text.js";

const config = testConfig({
  providers: {
    main: { protocol: "openai", base_url: "http://127.0.0.1:9/v1" },
    backup: { protocol: "anthropic", base_url: "http://127.0.0.1:9" },
  },
  models: {
    m1: { kind: "chat", upstream: "m1", targets: ["main", "backup"] },
    judge: { kind: "systemone", upstream: "1.13.0", targets: ["main"], reseller_aliases: ["judge-resale"] },
  },
  metrics: { enabled: true, token: "a-metrics-token-of-some-length" },
});

async function scrape(metrics: ReturnType<typeof createPrometheusMetrics>) {
  return parsePrometheus(await metrics.exposition!.scrape());
}

describe("label values are bounded", () => {
  it("keeps the config's own IDs and maps everything else to one value", () => {
    const model = boundedLabel(publicModelIds(config));
    expect(model("m1")).toBe("m1");
    expect(model("judge-resale")).toBe("judge-resale");
    expect(model("gpt-5-made-up")).toBe("other");
    expect(model("__proto__")).toBe("other");
    expect(model("")).toBe("none");
    expect(model(undefined)).toBe("none");
  });

  it("classes statuses, a client gone (499) as 4xx", () => {
    const classOf = (status: number) => STATUS_CLASSES[statusClassIndex(status)];
    expect([200, 204, 401, 404, 499, 500, 503, 529].map(classOf)).toEqual(["2xx", "2xx", "4xx", "4xx", "4xx", "5xx", "5xx", "5xx"]);
    expect(classOf(0)).toBe("1xx");
    expect(classOf(999)).toBe("5xx");
  });

  it("names a fallback's cause from a fixed set", () => {
    expect(fallbackCause("connect", null)).toBe("connect");
    expect(fallbackCause("timeout", null)).toBe("timeout");
    expect(fallbackCause("protocol", 200)).toBe("protocol");
    expect(fallbackCause("status", 429)).toBe("status_429");
    expect(fallbackCause("status", 503)).toBe("status_5xx");
    expect(fallbackCause("status", 529)).toBe("status_5xx");
    expect(fallbackCause("status", 400)).toBe("other");
    expect(fallbackCause("something new", null)).toBe("other");
  });

  it("counts a thousand made-up model and provider IDs as one series each", async () => {
    const metrics = createPrometheusMetrics(config);
    for (let i = 0; i < 1000; i++) {
      metrics.requests.request("/v1/chat/completions", `made-up-${i}`, "openai", 404);
      metrics.upstream.answered(`provider-${i}`, 0.01);
      metrics.upstream.fallback(`provider-${i}`, `failure-${i}`, i);
    }
    metrics.requests.request("/v1/chat/completions", "m1", "carrier-pigeon", 200);
    const series = await scrape(metrics);
    const requests = series.filter((s) => s.name === "gateway_requests_total");
    expect(requests).toEqual([
      {
        name: "gateway_requests_total",
        labels: { route: "/v1/chat/completions", model: "other", client_protocol: "openai", status_class: "4xx" },
        value: 1000,
      },
      {
        name: "gateway_requests_total",
        labels: { route: "/v1/chat/completions", model: "m1", client_protocol: "other", status_class: "2xx" },
        value: 1,
      },
    ]);
    expect(sample(series, "gateway_upstream_ttfb_seconds_count", { provider: "other" })).toBe(1000);
    expect(series.filter((s) => s.name === "gateway_upstream_fallbacks_total")).toEqual([
      { name: "gateway_upstream_fallbacks_total", labels: { provider: "other", cause: "other" }, value: 1000 },
    ]);
  });
});

describe("the Prometheus recorders", () => {
  it("count holds, posts, voids, overshoots (and by how much), expiries and syncs", async () => {
    const metrics = createPrometheusMetrics(config);
    const daily = metrics.ledger.account("daily_allowance");
    const usd = metrics.ledger.account("reseller_usd");
    for (let i = 0; i < 3; i++) daily.held();
    daily.posted(90n, 100n);
    daily.posted(130n, 100n);
    daily.voided();
    usd.held();
    usd.posted(5_000n, 1_000n);
    daily.expired();
    metrics.ledger.expired(2, 1);
    daily.synced(0.004);
    daily.waited(0.003);
    daily.waited(0.2);
    daily.syncFailed();
    const series = await scrape(metrics);
    const kind = (account_kind: string) => ({ account_kind });
    expect(sample(series, "gateway_ledger_holds_total", kind("daily_allowance"))).toBe(3);
    expect(sample(series, "gateway_ledger_posts_total", kind("daily_allowance"))).toBe(2);
    expect(sample(series, "gateway_ledger_voids_total", kind("daily_allowance"))).toBe(1);
    expect(sample(series, "gateway_ledger_overshoots_total", kind("daily_allowance"))).toBe(1);
    expect(sample(series, "gateway_ledger_overshoot_units_total", kind("daily_allowance"))).toBe(30);
    expect(sample(series, "gateway_ledger_overshoot_units_total", kind("reseller_usd"))).toBe(4_000);
    expect(sample(series, "gateway_ledger_expiries_total", { what: "hold" })).toBe(1);
    expect(sample(series, "gateway_ledger_expiries_total", { what: "lease" })).toBe(2);
    expect(sample(series, "gateway_ledger_expiries_total", { what: "durable_hold" })).toBe(1);
    expect(sample(series, "gateway_ledger_lease_sync_duration_seconds_count", kind("daily_allowance"))).toBe(1);
    expect(sample(series, "gateway_ledger_admission_wait_seconds_count", kind("daily_allowance"))).toBe(2);
    expect(sample(series, "gateway_ledger_admission_wait_seconds_bucket", { ...kind("daily_allowance"), le: "0.05" })).toBe(1);
    expect(sample(series, "gateway_ledger_lease_sync_failures_total", kind("daily_allowance"))).toBe(1);
    // Shown from 0 on, before their first event.
    expect(sample(series, "gateway_ledger_voids_total", kind("reseller_usd"))).toBe(0);
  });

  it("read the gauges from their owners at scrape time", async () => {
    const metrics = createPrometheusMetrics(config);
    const state = { buffered: 7, dropped: 2, inUse: 1024, up: false };
    const sources: ScrapeSources = {
      requestLog: { stats: () => ({ buffered: state.buffered, dropped: state.dropped }) },
      bodyBudget: { capacity: 4096, inUse: () => state.inUse },
      health: { stats: () => ({ up: state.up, outages: 3, blips: 5, downMs: 1500, totalDownMs: 60_000 }) },
      ledger: {
        stats: () => ({
          unsynced: 4,
          accounts: [{ kind: "daily_allowance", leases: 2, holds: 3, held: 300n, free: 700n, waits: 0, syncs: 0 }],
        }),
      },
    };
    metrics.watch(sources);
    let series = await scrape(metrics);
    expect(sample(series, "gateway_request_log_queue_rows")).toBe(7);
    expect(sample(series, "gateway_request_log_dropped_rows_total")).toBe(2);
    expect(sample(series, "gateway_body_budget_in_use_bytes")).toBe(1024);
    expect(sample(series, "gateway_body_budget_capacity_bytes")).toBe(4096);
    expect(sample(series, "gateway_database_up")).toBe(0);
    expect(sample(series, "gateway_database_outages_total")).toBe(3);
    expect(sample(series, "gateway_database_blips_total")).toBe(5);
    expect(sample(series, "gateway_database_down_seconds")).toBe(1.5);
    expect(sample(series, "gateway_database_down_seconds_total")).toBe(60);
    expect(sample(series, "gateway_ledger_settlements_unsynced")).toBe(4);
    const daily = { account_kind: "daily_allowance" };
    expect(sample(series, "gateway_ledger_leases", daily)).toBe(2);
    expect(sample(series, "gateway_ledger_holds_in_flight", daily)).toBe(3);
    expect(sample(series, "gateway_ledger_held_units", daily)).toBe(300);
    expect(sample(series, "gateway_ledger_free_units", daily)).toBe(700);
    Object.assign(state, { buffered: 0, dropped: 3, inUse: 0, up: true });
    series = await scrape(metrics);
    expect(sample(series, "gateway_request_log_queue_rows")).toBe(0);
    expect(sample(series, "gateway_request_log_dropped_rows_total")).toBe(3);
    expect(sample(series, "gateway_body_budget_in_use_bytes")).toBe(0);
    expect(sample(series, "gateway_database_up")).toBe(1);
  });

  it("has a registry per instance, with the process's default metrics, and leaves prom-client's global one alone", async () => {
    const a = createPrometheusMetrics(config);
    const b = createPrometheusMetrics(config);
    a.requests.request("/healthz", undefined, undefined, 200);
    expect(sample(await scrape(a), "gateway_requests_total")).toBe(1);
    const other = await scrape(b);
    expect(sample(other, "gateway_requests_total")).toBeUndefined();
    expect(sample(other, "process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(other.some((s) => s.name.startsWith("nodejs_eventloop_lag"))).toBe(true);
    expect(await globalRegistry.getMetricsAsJSON()).toEqual([]);
  });
});

describe("metrics off", () => {
  it("records nothing, serves nothing, and costs an empty call", () => {
    const account = noMetrics.ledger.account("daily_allowance");
    expect(() => {
      noMetrics.requests.request("/v1/chat/completions", "m1", "openai", 200);
      noMetrics.upstream.answered("main", 1);
      noMetrics.upstream.ended("main", 1);
      noMetrics.upstream.fallback("main", "connect", null);
      account.held();
      account.posted(2n, 1n);
      account.voided();
      account.expired();
      account.synced(1);
      account.syncFailed();
      noMetrics.ledger.expired(1, 1);
      noMetrics.watch({} as ScrapeSources);
    }).not.toThrow();
    expect(noMetrics.exposition).toBeNull();
    expect(noMetrics.ledger.account("reseller_usd")).toBe(account);
  });
});
