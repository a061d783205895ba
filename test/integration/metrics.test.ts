import { request as httpRequest, type ClientRequest } from "node:http";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../src/db/free-port.js";
import { createPrometheusMetrics } from "../../src/metrics/prometheus.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { createMetricsApp } from "../../src/runtime/app.js";
import { startGateway } from "../../src/runtime/gateway.js";
import { createLogger } from "../../src/logger.js";
import { startTestGateway, testConfig, type TestGateway } from "../helpers/gateway-app.js";
import { quiesce } from "../helpers/metering-checks.js";
import { parsePrometheus, sample, type Series } from "../helpers/prometheus-text.js";

// GET /metrics of a real app over real HTTP and a real database: requests driven through the metering path
// (the mock upstream behind it, a dead provider to fall back from) move the counters they should, by exactly as
// much; the token is required on the main address; a gateway without metrics has no such route; a listener of
// its own serves without a token and stops with the gateway.

const TOKEN = "metrics-test-token-0123456789";
const CHAT = "/v1/chat/completions";

let mock: MockUpstream;
let gw: TestGateway;
let key: string;
let userId: string;

beforeAll(async () => {
  mock = await startMockUpstream();
  const closedPort = await freePort();
  const model = (targets: string[]) => ({ kind: "chat" as const, upstream: "mock-gpt-small", targets });
  gw = await startTestGateway({
    config: {
      providers: {
        main: { protocol: "openai", base_url: mock.baseUrl },
        dead: { protocol: "openai", base_url: `http://127.0.0.1:${closedPort}/v1` },
      },
      models: { "m-main": model(["main"]), "m-fb": model(["dead", "main"]), "m-dead": model(["dead"]) },
      plans: { free: { daily_tokens: 10_000_000, context_limit: 128_000 } },
      // Rows of refused requests stay in the writer's queue until the test flushes it.
      analytics: { flush_interval_ms: 3_600_000, batch_size: 5000 },
      metrics: { enabled: true, token: TOKEN },
    },
  });
  userId = (await gw.services.auth.users.create({ email: "metrics@example.test", password: "password-123" })).id;
  key = (await gw.services.auth.apiKeys.create({ user: "metrics@example.test" })).key;
});

afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

async function scrape(url = gw.url, token: string | null = TOKEN): Promise<Series[]> {
  const res = await fetch(`${url}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return parsePrometheus(await res.text());
}

/** How much each named sample moved between two scrapes (absent before: from 0). */
const moved = (before: Series[], after: Series[], name: string, labels: Record<string, string> = {}) =>
  (sample(after, name, labels) ?? 0) - (sample(before, name, labels) ?? 0);

async function chat(model: string, opts: { stream?: boolean; auth?: boolean } = {}) {
  const res = await fetch(`${gw.url}${CHAT}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(opts.auth === false ? {} : { authorization: `Bearer ${key}` }) },
    body: JSON.stringify({ model, messages: [{ role: "user", content: "Count me" }], max_tokens: 16, stream: opts.stream ?? false }),
  });
  await res.text();
  return res.status;
}

/** Scrapes until `check` holds (a gauge follows something in flight); fails after a few seconds. */
async function scrapeUntil(check: (series: Series[]) => boolean): Promise<Series[]> {
  for (let tries = 0; ; tries++) {
    const series = await scrape();
    if (check(series)) return series;
    if (tries > 100) throw new Error("the metrics never showed what the test waited for");
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("GET /metrics on the main address", () => {
  it("answers 401 in the error envelope without the token, in another scheme or with a wrong one", async () => {
    for (const authorization of [undefined, `Basic ${TOKEN}`, "Bearer wrong-token-of-the-same-size", `Bearer ${TOKEN}x`]) {
      const res = await fetch(`${gw.url}/metrics`, { headers: authorization ? { authorization } : {} });
      expect(res.status).toBe(401);
      const body = (await res.json()) as { error: Record<string, unknown> };
      expect(body.error).toMatchObject({ code: "invalid_api_key", param: null, request_id: res.headers.get("x-request-id") });
      expect(JSON.stringify(body)).not.toContain("gateway_");
    }
    const series = await scrape();
    expect(sample(series, "gateway_requests_total", { route: "/metrics", status_class: "4xx", model: "none" })).toBeGreaterThanOrEqual(4);
  });

  it("counts requests, upstream calls, fallbacks and the ledger's holds, posts and voids by exactly what was sent", async () => {
    const before = await scrape();
    const statuses = [
      ...(await Promise.all([chat("m-main"), chat("m-main"), chat("m-main"), chat("m-main", { stream: true })])),
      await chat("m-fb"),
      await chat("m-dead"),
      await chat("gpt-made-up"),
      await chat("m-main", { auth: false }),
    ];
    expect(statuses).toEqual([200, 200, 200, 200, 200, 502, 404, 401]);
    await quiesce(gw);
    const after = await scrape();
    const requests = (labels: Record<string, string>) => moved(before, after, "gateway_requests_total", labels);
    const chatRoute = { route: CHAT, client_protocol: "openai" };
    expect(requests({ ...chatRoute, model: "m-main", status_class: "2xx" })).toBe(4);
    expect(requests({ ...chatRoute, model: "m-fb", status_class: "2xx" })).toBe(1);
    expect(requests({ ...chatRoute, model: "m-dead", status_class: "5xx" })).toBe(1);
    // A model ID the config does not name is one label value, whatever the client sent.
    expect(requests({ ...chatRoute, model: "other", status_class: "4xx" })).toBe(1);
    expect(after.some((s) => Object.values(s.labels).includes("gpt-made-up"))).toBe(false);
    // Refused by the key check before any route: the pattern that answered, no model, no protocol.
    expect(requests({ route: "/v1/*", model: "none", client_protocol: "none", status_class: "4xx" })).toBe(1);

    const main = { provider: "main" };
    expect(moved(before, after, "gateway_upstream_ttfb_seconds_count", main)).toBe(5);
    expect(moved(before, after, "gateway_upstream_duration_seconds_count", main)).toBe(5);
    expect(moved(before, after, "gateway_upstream_duration_seconds_bucket", { provider: "main", le: "+Inf" })).toBe(5);
    expect(moved(before, after, "gateway_upstream_ttfb_seconds_count", { provider: "dead" })).toBe(0);
    expect(moved(before, after, "gateway_upstream_fallbacks_total", { provider: "dead", cause: "connect" })).toBe(1);
    expect(moved(before, after, "gateway_upstream_fallbacks_total")).toBe(1);

    const daily = { account_kind: "daily_allowance" };
    expect(moved(before, after, "gateway_ledger_holds_total", daily)).toBe(6);
    expect(moved(before, after, "gateway_ledger_posts_total", daily)).toBe(5);
    expect(moved(before, after, "gateway_ledger_voids_total", daily)).toBe(1);
    expect(moved(before, after, "gateway_ledger_overshoots_total", daily)).toBe(0);
    expect(moved(before, after, "gateway_ledger_lease_sync_duration_seconds_count", daily)).toBeGreaterThan(0);
    expect(sample(after, "gateway_ledger_holds_in_flight", daily)).toBe(0);
    expect(sample(after, "gateway_ledger_settlements_unsynced")).toBe(0);
    expect(sample(after, "gateway_database_up")).toBe(1);
  });

  it("counts a settlement above its hold as an overshoot, and by how much", async () => {
    const before = await scrape();
    const reserved = await gw.services.ledger.reserve({
      kind: "daily_allowance",
      userId,
      base: 10_000_000n,
      amount: 10n,
      requestId: "req_overshoot",
    });
    if (!reserved.ok) throw new Error("the reservation was refused");
    await gw.services.ledger.settle(reserved.hold.id, 25n);
    const after = await scrape();
    const daily = { account_kind: "daily_allowance" };
    expect(moved(before, after, "gateway_ledger_holds_total", daily)).toBe(1);
    expect(moved(before, after, "gateway_ledger_posts_total", daily)).toBe(1);
    expect(moved(before, after, "gateway_ledger_overshoots_total", daily)).toBe(1);
    expect(moved(before, after, "gateway_ledger_overshoot_units_total", daily)).toBe(15);
  });

  it("shows the request-log writer's queue as it fills and drains, and no row dropped", async () => {
    await gw.services.requestLog.flush();
    expect(sample(await scrape(), "gateway_request_log_queue_rows")).toBe(0);
    // Refused before anything was held: their rows go through the batched writer.
    expect(await Promise.all([chat("made-up-1"), chat("made-up-2"), chat("made-up-3")])).toEqual([404, 404, 404]);
    const queued = await scrape();
    expect(sample(queued, "gateway_request_log_queue_rows")).toBe(3);
    await gw.services.requestLog.flush();
    const drained = await scrape();
    expect(sample(drained, "gateway_request_log_queue_rows")).toBe(0);
    expect(sample(drained, "gateway_request_log_dropped_rows_total")).toBe(0);
  });

  it("shows the body budget held by an evaluation body being read, and given back", async () => {
    const declared = 1_000_000;
    const url = new URL(`${gw.url}/v1/systemone`);
    let upload: ClientRequest | undefined;
    try {
      upload = httpRequest({
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json", "content-length": declared },
      });
      upload.on("error", () => {});
      upload.write('{"model":');
      const held = await scrapeUntil((s) => sample(s, "gateway_body_budget_in_use_bytes") === declared);
      expect(sample(held, "gateway_body_budget_capacity_bytes")).toBe(gw.services.config.systemone.admission_budget_bytes);
    } finally {
      upload?.destroy();
    }
    await scrapeUntil((s) => sample(s, "gateway_body_budget_in_use_bytes") === 0);
  });
});

describe("without metrics", () => {
  it("has no /metrics route: 404 like any unknown path", async () => {
    const plain = await startTestGateway({ db: gw.db });
    try {
      expect(plain.services.metrics.exposition).toBeNull();
      for (const authorization of [undefined, `Bearer ${TOKEN}`]) {
        const res = await fetch(`${plain.url}/metrics`, { headers: authorization ? { authorization } : {} });
        expect(res.status).toBe(404);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe("unknown_route");
      }
    } finally {
      await plain.close();
    }
  });
});

describe("metrics on an address of their own (metrics.listen)", () => {
  it("serves /metrics there without a token, not on the main address, and stops with the gateway", async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), "gateway-metrics-"));
    const running = await startGateway({
      config: testConfig({
        server: { port: 0 },
        database: { url: gw.db.url },
        metrics: { enabled: true, listen: { host: "127.0.0.1", port: 0 } },
      }),
      dataDir,
      env: {},
      logger: createLogger("silent"),
      worker: false,
    });
    const metricsUrl = running.metricsUrl!;
    try {
      expect(metricsUrl).not.toBe(running.url);
      expect((await fetch(`${running.url}/healthz`)).status).toBe(200);
      const series = await scrape(metricsUrl, null);
      expect(sample(series, "gateway_requests_total", { route: "/healthz", model: "none", status_class: "2xx" })).toBe(1);
      expect(sample(series, "gateway_body_budget_in_use_bytes")).toBe(0);
      // The main address does not serve it, with or without a token.
      expect((await fetch(`${running.url}/metrics`)).status).toBe(404);
      const elsewhere = await fetch(`${metricsUrl}/v1/models`);
      expect(elsewhere.status).toBe(404);
      expect(((await elsewhere.json()) as { error: { code: string } }).error.code).toBe("unknown_route");
    } finally {
      await running.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
    await expect(fetch(`${metricsUrl}/metrics`)).rejects.toThrow();
  });

  it("still asks for the token there when one is configured", async () => {
    const config = testConfig({ metrics: { enabled: true, token: TOKEN, listen: { port: 0 } } });
    const app = createMetricsApp({ config, logger: createLogger("silent") }, createPrometheusMetrics(config).exposition!);
    expect((await app.request("/metrics")).status).toBe(401);
    expect((await app.request("/metrics", { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
  });
});
