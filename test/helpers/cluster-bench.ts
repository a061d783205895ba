import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll } from "vitest";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { gateway, tempDir } from "./cli.js";
import { GatewayCluster } from "./crash-cluster.js";
import { createTestDatabase, type TestDatabase } from "./db.js";
import { startFaultProxy, type FaultProxy } from "./fault-proxy.js";

// What the end-to-end crash and fault tests share around their `gateway serve` clusters: a work dir, the mock
// upstream behind a fault proxy (whose base_url injects the mock's fault headers), the admin CLI, and a cleanup
// that leaves no process, database or file behind even when a scenario failed half-way.

export interface ClusterBench {
  /** The work dir and the upstream's proxy, from beforeAll on. */
  readonly workDir: string;
  readonly upstream: FaultProxy;
  /** A database of its own, dropped at the end. */
  database(): Promise<TestDatabase>;
  /** A cluster of `gateway serve` processes in the work dir, every process killed at the end. */
  cluster(opts: { configFile: string; databaseUrl: string; worker: boolean }): GatewayCluster;
  /** Clients or samplers to stop at the end, if the scenario did not. */
  running<T extends { stop(): Promise<unknown> }>(thing: T): T;
  /** Runs once every process has exited (a proxy in front of the database, say). */
  afterProcesses(cleanup: () => Promise<unknown>): void;
  /** Writes `config` (JSON is YAML) as `<name>.yaml` in the work dir. */
  writeConfig(name: string, config: unknown): string;
  /** One admin command with `--json`; throws with its stderr when it fails. */
  cli(args: string[], configFile: string, db: TestDatabase): Promise<Record<string, string>>;
}

export function useClusterBench(prefix: string): ClusterBench {
  let mock: MockUpstream | undefined;
  let upstream: FaultProxy | undefined;
  let work: Awaited<ReturnType<typeof tempDir>> | undefined;
  const clusters: GatewayCluster[] = [];
  const databases: TestDatabase[] = [];
  const running: { stop(): Promise<unknown> }[] = [];
  const cleanups: (() => Promise<unknown>)[] = [];

  const bench: ClusterBench = {
    get workDir() {
      return work!.dir;
    },
    get upstream() {
      return upstream!;
    },
    async database() {
      const db = await createTestDatabase();
      databases.push(db);
      return db;
    },
    cluster(opts) {
      const cluster = new GatewayCluster({ cwd: bench.workDir, ...opts });
      clusters.push(cluster);
      return cluster;
    },
    running(thing) {
      running.push(thing);
      return thing;
    },
    afterProcesses: (cleanup) => void cleanups.push(cleanup),
    writeConfig(name, config) {
      const file = path.join(bench.workDir, `${name}.yaml`);
      writeFileSync(file, JSON.stringify(config, null, 2));
      return file;
    },
    async cli(args, configFile, db) {
      const result = await gateway([...args, "--config", configFile, "--json"], { cwd: bench.workDir, env: { DATABASE_URL: db.url } });
      if (result.exitCode !== 0) throw new Error(`gateway ${args.join(" ")} failed: ${result.stderr}`);
      return JSON.parse(result.stdout) as Record<string, string>;
    },
  };

  beforeAll(async () => {
    work = await tempDir(prefix);
    mock = await startMockUpstream({ apiKey: "mock-key" });
    upstream = await startFaultProxy(mock.url);
  });

  afterAll(async () => {
    const stopping = running.map((r) => r.stop().catch(() => {}));
    for (const cluster of clusters) cluster.killAll();
    await Promise.all(stopping);
    await Promise.all(clusters.flatMap((c) => c.all.map((p) => p.serve.proc.catch(() => {}))));
    for (const cleanup of cleanups) await cleanup().catch(() => {});
    await upstream?.close();
    await mock?.close();
    for (const db of databases) await db.drop().catch(() => {});
    await work?.remove();
  });

  return bench;
}
