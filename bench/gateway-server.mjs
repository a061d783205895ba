// A `gateway serve` for the benchmarks: a generated config with the mock as its only provider, an embedded
// PostgreSQL in the data directory (or DATABASE_URL), one user and one API key made with the CLI.
import { mkdirSync, writeFileSync } from "node:fs";
import { chmod, mkdtemp } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { registerPostmaster, registerTempDir, runNode, startProcess } from "./processes.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** A temporary directory for one benchmark run, removed on every exit path. */
export async function benchDir(prefix) {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  registerTempDir(dir);
  await chmod(dir, 0o755); // embedded PostgreSQL runs as the postgres user when we are root
  return dir;
}

/** `gateway mock-upstream` on a free port, requiring `key`; its url is `.match[1]`. */
export const startMock = (key) =>
  startProcess("mock", [path.join(root, "bin/gateway"), "mock-upstream", "--port", "0", "--api-key", key], {
    ready: /mock upstream listening on (http:\/\/\S+)/,
  });

/**
 * Writes the config, starts the gateway and makes the bench user and key. `metricsToken` turns GET /metrics on;
 * `probe` loads bench/gateway-probe.mjs into the gateway (its recordings go to `dataDir`); `nodeArgs` go to its node
 * (`--cpu-prof`, which NODE_OPTIONS refuses).
 */
export async function startGateway(dataDir, mockUrl, gatewayBin, { mockKey, metricsToken, probe = false, nodeArgs = [] } = {}) {
  // JSON is YAML; the plan's allowance is large enough that quota never refuses during the run.
  const config = {
    server: { host: "127.0.0.1", port: 0 },
    logging: { level: "warn" },
    providers: { mock: { protocol: "openai", base_url: `${mockUrl}/v1`, api_key: mockKey } },
    models: {
      "bench-chat": { kind: "chat", upstream: "mock-gpt-small", targets: ["mock"] },
      "bench-image": { kind: "image", upstream: "mock-image-large", targets: ["mock"] },
    },
    plans: { bench: { daily_tokens: 1e15, context_limit: 128_000 } },
    default_plan: "bench",
    ...(metricsToken ? { metrics: { enabled: true, token: metricsToken } } : {}),
  };
  mkdirSync(dataDir, { recursive: true });
  const configFile = path.join(dataDir, "gateway.yaml");
  writeFileSync(configFile, JSON.stringify(config, null, 2));
  const pgDir = path.join(dataDir, "db");
  registerPostmaster(path.join(pgDir, "pg", "postmaster.pid"));
  const serveArgs = [gatewayBin, "serve", "--config", configFile, "--port", "0", "--data-dir", pgDir];
  const start = () =>
    startProcess("gateway", [...nodeArgs, ...(probe ? ["--import", path.join(root, "bench/gateway-probe.mjs")] : []), ...serveArgs], {
      ready: /gateway listening on (http:\/\/\S+)/,
      timeoutMs: 180_000,
      env: { ...process.env, BENCH_PROBE_DIR: dataDir },
    });
  // The worker runs, as in production.
  let gw = await start();
  const common = ["--data-dir", pgDir, "--config", configFile, "--json"];
  await runNode("users create", [
    gatewayBin,
    "users",
    "create",
    "--email",
    "bench@example.com",
    "--password",
    "bench-password-2026",
    ...common,
  ]);
  const { key } = JSON.parse(await runNode("keys create", [gatewayBin, "keys", "create", "--user", "bench@example.com", ...common]));
  const target = {
    url: gw.match[1],
    key,
    model: "bench-chat",
    imageModel: "bench-image",
    pid: gw.pid,
    probeDir: probe ? dataDir : undefined,
    /** Stops the gateway (SIGTERM, its drain) and starts it again on the same database: a deploy's restart. */
    async restart() {
      process.kill(gw.pid, "SIGTERM");
      await gw.exitedPromise;
      gw = await start();
      target.url = gw.match[1];
      target.pid = gw.pid;
    },
  };
  return target;
}
