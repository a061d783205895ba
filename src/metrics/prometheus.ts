import { collectDefaultMetrics, Registry } from "prom-client";
import type { Config } from "../config/schema.js";
import { ledgerMetrics } from "./ledger-metrics.js";
import type { Metrics, ScrapeSources } from "./recorders.js";
import { scrapeGauges } from "./scrape-gauges.js";
import { requestMetrics, upstreamMetrics } from "./traffic-metrics.js";

/**
 * The metrics of one gateway instance, on a Registry of its own (never prom-client's global one, so that two
 * gateways in one process, as in tests, count apart). prom-client's default metrics keep their usual names
 * (`process_*`, `nodejs_*`: event-loop delay, memory, GC), which stock dashboards expect.
 */
export function createPrometheusMetrics(config: Config): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  let sources: ScrapeSources | undefined;
  scrapeGauges(registry, () => sources);
  return {
    requests: requestMetrics(registry, config),
    upstream: upstreamMetrics(registry, config),
    ledger: ledgerMetrics(registry),
    watch(s) {
      sources = s;
    },
    exposition: { contentType: registry.contentType, scrape: () => registry.metrics() },
  };
}
