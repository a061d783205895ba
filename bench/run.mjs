// npm run bench: the gateway's overhead over calling the upstream directly, as ratios from one run.
// This first benchmark covers the authenticated model list (key lookup via the cache, catalog, envelope,
// request id, access log); the chat metering path joins it with issue 3.
// Runs on the built CLI modules (npm run build) and the embedded database unless DATABASE_URL is set.
import autocannon from "autocannon";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";

const dist = (p) => new URL(`../dist/${p}`, import.meta.url).href;
const { startMockUpstream } = await import(dist("src/mock-upstream/server.js"));
const { startGateway } = await import(dist("src/runtime/gateway.js"));
const { parseConfig } = await import(dist("src/config/load.js"));
const { demoConfig } = await import(dist("src/config/demo.js"));
const { createLogger } = await import(dist("src/server/logger.js"));

const duration = Number(process.env.BENCH_SECONDS ?? 5);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);

const dataDir = await mkdtemp(path.join(os.tmpdir(), "gateway-bench-"));
await chmod(dataDir, 0o755);
const mock = await startMockUpstream({ apiKey: "mock-key" });
const config = parseConfig({ ...demoConfig(mock.baseUrl, "mock-key"), server: { port: 0 }, logging: { level: "warn" } }, "bench");
const gateway = await startGateway({ config, dataDir, env: process.env, logger: createLogger("warn"), worker: false });

try {
  const user = await gateway.services.auth.users.create({ email: "bench@example.com", password: "bench-password" });
  const { key } = await gateway.services.auth.apiKeys.create({ user: user.id });

  const run = (url, headers) =>
    new Promise((resolve, reject) =>
      autocannon({ url, headers, connections, duration }, (err, result) => (err ? reject(err) : resolve(result))),
    );
  const targets = {
    direct: () => run(`${mock.baseUrl}/models`, { authorization: "Bearer mock-key" }),
    gateway: () => run(`${gateway.url}/v1/models`, { authorization: `Bearer ${key}` }),
  };
  const results = { direct: [], gateway: [] };
  // Interleaved rounds, so drift of the shared machine hits both sides alike.
  for (let round = 0; round < 2; round++) {
    for (const [name, fn] of Object.entries(targets)) {
      const r = await fn();
      if (r.non2xx || r.errors) throw new Error(`${name}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      results[name].push(r);
    }
  }
  const summary = (name) => {
    const rs = results[name];
    const avg = (f) => rs.reduce((s, r) => s + f(r), 0) / rs.length;
    return { rps: avg((r) => r.requests.average), p50: avg((r) => r.latency.p50), p99: avg((r) => r.latency.p99) };
  };
  const d = summary("direct");
  const g = summary("gateway");
  console.log(`GET /v1/models, ${connections} connections, ${duration}s x2 interleaved rounds`);
  console.table({ direct: d, gateway: g });
  console.log(
    `throughput ratio gateway/direct: ${(g.rps / d.rps).toFixed(2)}; p50 overhead: ${(g.p50 - d.p50).toFixed(2)} ms; ` +
      `p99 overhead: ${(g.p99 - d.p99).toFixed(2)} ms; RSS ${Math.round(process.memoryUsage().rss / 1e6)} MB (bench + gateway + mock)`,
  );
} finally {
  await gateway.stop();
  await mock.close();
  await rm(dataDir, { recursive: true, force: true });
}
