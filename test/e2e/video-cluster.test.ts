import { describe, expect, it } from "vitest";
import { reconcileLedger } from "../../src/quota/index.js";
import { useClusterBench } from "../helpers/cluster-bench.js";
import type { GatewayCluster } from "../helpers/crash-cluster.js";
import type { TestDatabase } from "../helpers/db.js";

// A video job outlives the process that took it (docs/api.md, "Video"): two `gateway serve` processes on one
// database, a video submitted on one, which is SIGKILLed; the survivor polls the job to its end (every serving
// process polls due jobs, with or without graphile-worker), posts its hold and writes its one request-log row, and
// the ledger reconciles.

// Seconds per video, at 100 units per second.
const DURATION = 3;

describe("video jobs over two gateway processes, one killed", () => {
  const bench = useClusterBench("gateway-e2e-video-");

  async function setUp(name: string, worker: boolean, claimSeconds: number) {
    const db = await bench.database();
    const configFile = bench.writeConfig(name, {
      providers: { vid: { protocol: "video", base_url: bench.upstream.baseUrl({}), api_key: "mock-key" } },
      models: {
        clip: {
          kind: "video",
          upstream: "mock-video",
          targets: ["vid"],
          video_price: { units_per_second: 100, default_seconds: 5, max_seconds: 20 },
        },
      },
      plans: { std: { daily_tokens: 100_000, context_limit: 128_000 } },
      default_plan: "std",
      media: { video: { poll_interval_seconds: 1, claim_seconds: claimSeconds } },
    });
    const email = `${name}@example.test`;
    await bench.cli(["users", "create", "--email", email, "--password", "video-cluster-pw"], configFile, db);
    const { key } = await bench.cli(["keys", "create", "--user", email], configFile, db);
    return { db, key: key!, cluster: bench.cluster({ configFile, databaseUrl: db.url, worker }) };
  }

  async function submit(url: string, key: string) {
    const res = await fetch(`${url}/v1/video/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "clip", prompt: "a lighthouse in a storm", duration: DURATION }),
    });
    expect(res.status).toBe(200);
    return { id: ((await res.json()) as { id: string }).id, requestId: res.headers.get("x-request-id")! };
  }

  /** The survivor (process 1) shows the job completed; its hold is posted once and its request logged once. */
  async function endsOnTheSurvivor(
    env: { db: TestDatabase; key: string; cluster: GatewayCluster },
    job: { id: string; requestId: string },
  ) {
    const { db, key, cluster } = env;
    const read = async () => {
      const seen = await fetch(`${cluster.current[1]!.url}/v1/video/generations/${job.id}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      return ((await seen.json()) as { status: string }).status;
    };
    await expect.poll(read, { timeout: 90_000, interval: 250 }).toBe("completed");
    const { rows: holds } = await db.pool.query<{ status: string; charged: string }>(
      "select h.status, h.charged::text from quota_holds h join video_jobs j on j.hold_id = h.id where j.id = $1",
      [job.id],
    );
    expect(holds).toEqual([{ status: "posted", charged: String(DURATION * 100) }]);
    const { rows: logs } = await db.pool.query<{ status: number; quota_charged: string }>(
      "select status, quota_charged::text from request_logs where request_id = $1",
      [job.requestId],
    );
    expect(logs).toEqual([{ status: 200, quota_charged: String(DURATION * 100) }]);
    // The survivor stops cleanly: its poller holds no timer and no poll open.
    expect(await cluster.stop()).toEqual([expect.objectContaining({ index: 1, exitCode: 0 })]);
    expect(await reconcileLedger(db.pool)).toEqual([]);
  }

  it.each([
    ["with their workers", true],
    ["all on --no-worker", false],
  ])(
    "killed right after the 2xx, %s: the survivor polls the job from its first poll on",
    async (_, worker) => {
      const env = await setUp(`video-${worker ? "worker" : "no-worker"}`, worker, 2);
      const [p0] = await Promise.all([env.cluster.start(0), env.cluster.start(1)]);
      const job = await submit(p0.url, env.key);
      await env.cluster.kill(0);
      await endsOnTheSurvivor(env, job);
    },
    180_000,
  );

  it("killed while it polls the job: the survivor takes it over once the dead process's claim lapses", async () => {
    const env = await setUp("video-mid-poll", true, 20);
    const p0 = await env.cluster.start(0);
    const job = await submit(p0.url, env.key);
    // The upstream now takes 30 s to answer a status: process 0's poll of the job is held there, under its claim.
    bench.upstream.inject = { "x-mock-delay-ms": "30000" };
    const before = bench.upstream.requests.length;
    const statusAsked = () => bench.upstream.requests.slice(before).some((r) => /\/video\/generations\/vid_/.test(r.path));
    await expect.poll(statusAsked, { timeout: 30_000, interval: 50 }).toBe(true);
    await env.cluster.kill(0);
    bench.upstream.reset();
    await env.cluster.start(1);
    await endsOnTheSurvivor(env, job);
  }, 180_000);
});
