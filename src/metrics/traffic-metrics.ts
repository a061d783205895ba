import type { Registry } from "prom-client";
import { providerProtocols } from "../config/catalog-schema.js";
import type { Config } from "../config/schema.js";
import { boundedLabel, fallbackCause, OTHER, publicModelIds, STATUS_CLASSES, statusClassIndex } from "./labels.js";
import type { RequestMetrics, UpstreamMetrics } from "./recorders.js";
import { counterFamily, histogramFamily, type CounterSeries, type HistogramSeries } from "./series.js";

// Requests and upstream calls: recorded per request, so every series is looked up in a cache of its own (maps keyed
// by the bounded label values) instead of building a label object per request, and recorded as a field update
// (series.ts).

/** Upstream seconds: from a local mock's milliseconds to a long generation's minutes. */
const UPSTREAM_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

export function requestMetrics(registry: Registry, config: Config): RequestMetrics {
  const counter = counterFamily(registry, {
    name: "gateway_requests_total",
    help: "Requests answered, by route pattern, public model, client protocol and status class.",
    labelNames: ["route", "model", "client_protocol", "status_class"],
  });
  const modelOf = boundedLabel(publicModelIds(config));
  const protocolOf = boundedLabel(providerProtocols);
  // route -> model -> protocol -> one child per status class. Routes are the app's registered patterns.
  const children = new Map<string, Map<string, Map<string, CounterSeries[]>>>();
  return {
    request(route, model, protocol, status) {
      const m = modelOf(model);
      const p = protocolOf(protocol);
      let byModel = children.get(route);
      if (byModel === undefined) children.set(route, (byModel = new Map()));
      let byProtocol = byModel.get(m);
      if (byProtocol === undefined) byModel.set(m, (byProtocol = new Map()));
      let byClass = byProtocol.get(p);
      if (byClass === undefined) byProtocol.set(p, (byClass = STATUS_CLASSES.map((c) => counter(route, m, p, c))));
      byClass[statusClassIndex(status)]!.inc();
    },
  };
}

interface ProviderChildren {
  answered: HistogramSeries;
  ended: HistogramSeries;
  /** By fallback cause. */
  fallbacks: Map<string, CounterSeries>;
}

export function upstreamMetrics(registry: Registry, config: Config): UpstreamMetrics {
  const ttfb = histogramFamily(registry, {
    name: "gateway_upstream_ttfb_seconds",
    help: "Seconds from sending a request to the target that answered until its first usable answer (a stream's first events, a JSON answer read whole).",
    labelNames: ["provider"],
    buckets: UPSTREAM_BUCKETS,
  });
  const duration = histogramFamily(registry, {
    name: "gateway_upstream_duration_seconds",
    help: "Seconds from sending a request to the target that answered until the answer was over (a JSON answer delivered, a stream relayed to its end).",
    labelNames: ["provider"],
    buckets: UPSTREAM_BUCKETS,
  });
  const fallbacks = counterFamily(registry, {
    name: "gateway_upstream_fallbacks_total",
    help: "Targets that failed before the next target was tried, by provider and cause.",
    labelNames: ["provider", "cause"],
  });
  const providerOf = boundedLabel(Object.keys(config.providers));
  // Every label value there can be, made at once: the lookup never misses.
  const byProvider = new Map<string, ProviderChildren>();
  for (const label of [...Object.keys(config.providers), OTHER]) {
    byProvider.set(label, { answered: ttfb(label), ended: duration(label), fallbacks: new Map() });
  }
  const of = (provider: string) => byProvider.get(providerOf(provider))!;
  return {
    answered: (provider, seconds) => of(provider).answered.observe(seconds),
    ended: (provider, seconds) => of(provider).ended.observe(seconds),
    fallback(provider, failure, status) {
      const cause = fallbackCause(failure, status);
      const byCause = of(provider).fallbacks;
      let child = byCause.get(cause);
      if (child === undefined) byCause.set(cause, (child = fallbacks(providerOf(provider), cause)));
      child.inc();
    },
  };
}
