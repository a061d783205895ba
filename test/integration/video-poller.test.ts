import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pool } from "../../src/db/pool.js";
import { claimDueVideoJobs, scheduleNextPoll } from "../../src/media/video-jobs.js";
import type { VideoPollDeps } from "../../src/media/video-poll.js";
import { pollDueVideoJobs, startVideoPoller } from "../../src/media/video-poller.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { videoPollDeps } from "../../src/runtime/services.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { rowsOf } from "../helpers/metering-checks.js";

// How video jobs are polled (docs/api.md, "Video"; docs/billing.md, "Video quota"): claimed one process at a time
// for `claim_seconds`, polled, then ended in ONE transaction with their hold and their request-log row, or given
// their next poll. Two gateways on one database stand for two processes; the upstream's requests are counted
// through a proxy. The mock moves a job one step per status request: in_progress, then completed (or failed).

let mock: MockUpstream;
let proxy: FaultProxy;
let gw: TestGateway;
let other: TestGateway;
let user: { id: string; key: string };

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const CLAIM_SECONDS = 2;
const price = { units_per_second: 100, default_seconds: 5, max_seconds: 20 };

function config() {
  return {
    providers: {
      vid: { protocol: "video" as const, base_url: proxy.baseUrl({}) },
      vidFail: { protocol: "video" as const, base_url: proxy.baseUrl({ "x-mock-video": "fail" }) },
    },
    models: {
      "video-a": { kind: "video" as const, upstream: "mock-video", targets: ["vid"], video_price: price },
      "video-fail": { kind: "video" as const, upstream: "mock-video", targets: ["vidFail"], video_price: price },
    },
    plans: { free: { daily_tokens: 200_000, context_limit: 128_000 } },
    media: { video: { poll_interval_seconds: 1, claim_seconds: CLAIM_SECONDS } },
  };
}

beforeAll(async () => {
  mock = await startMockUpstream();
  proxy = await startFaultProxy(mock.url);
  gw = await startTestGateway({ config: config() });
  // A second process on the same database.
  other = await startTestGateway({ config: config(), db: gw.db });
  const u = await gw.services.auth.users.create({ email: "video-poller@example.test", password: "password-123" });
  user = { id: u.id, key: (await gw.services.auth.apiKeys.create({ user: u.id })).key };
});

afterAll(async () => {
  await other?.close();
  await gw?.close();
  await proxy?.close();
  await mock?.close();
});

/** A job submitted now: its id, its request id and its upstream id. */
async function submit(model: string, duration = 2) {
  const res = await fetch(`${gw.url}/v1/video/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${user.key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, prompt: "a heron fishing", duration }),
  });
  expect(res.status).toBe(200);
  const id = ((await res.json()) as Json).id as string;
  const row = await jobRow(id);
  return { id, requestId: res.headers.get("x-request-id")!, upstreamId: row.upstream_job_id as string, holdId: row.hold_id as string };
}

const deps = (g: TestGateway = gw): VideoPollDeps => videoPollDeps(g.services);
const jobRow = async (id: string) => (await rowsOf(gw.db.pool, "select * from video_jobs where id = $1", [id]))[0]!;
const holdOf = async (id: string) =>
  (await rowsOf(gw.db.pool, "select h.* from quota_holds h join video_jobs j on j.hold_id = h.id where j.id = $1", [id]))[0]!;
const logRows = async (requestId: string) => rowsOf(gw.db.pool, "select * from request_logs where request_id = $1", [requestId]);
const used = async () => (await gw.services.ledger.balance({ kind: "daily_allowance", userId: user.id, base: 200_000n })).used;
/** Status requests the upstream got for one job. */
const polls = (upstreamId: string) => proxy.requests.filter((r) => r.path.endsWith(`/video/generations/${upstreamId}`)).length;
/** As if the job's poll interval (or its claim) had passed. */
const makeDue = (id: string) => gw.db.pool.query("update video_jobs set next_poll_at = now() where id = $1", [id]);

/** A pool whose transactions fail the statement containing `marker` once, with `error`. */
function failingOnce(pool: Pool, marker: string, error: () => Error): Pool & { fired(): boolean } {
  let armed = true;
  const wrapped = Object.create(pool) as Pool & { fired(): boolean };
  wrapped.query = pool.query.bind(pool) as Pool["query"];
  wrapped.fired = () => !armed;
  wrapped.connect = (async () => {
    const client = await pool.connect();
    const proxied = Object.create(client) as pg.PoolClient;
    proxied.query = ((text: unknown, values?: unknown[]) => {
      if (armed && typeof text === "string" && text.includes(marker)) {
        armed = false;
        return Promise.reject(error());
      }
      return client.query(text as string, values);
    }) as pg.PoolClient["query"];
    return proxied;
  }) as unknown as Pool["connect"];
  return wrapped;
}

/** The statement that ends the job row and writes its request-log row (src/media/video-jobs.ts, endVideoJob). */
const END_STATEMENT = "with ended as";

describe("a job ends in one transaction with its hold and its request-log row", () => {
  it("a hold posted before a failing poll (an earlier version died between its two steps) ends the job completed", async () => {
    const before = await used();
    const job = await submit("video-fail");
    await makeDue(job.id);
    await pollDueVideoJobs(deps());
    expect((await jobRow(job.id)).status).toBe("in_progress");
    // What a version that posted the hold in a statement of its own left behind when it died before ending the job.
    await gw.services.ledger.postDurable(job.holdId, 200n);

    // The upstream now says the job failed: the posted charge stands, and the job ends completed at it.
    await makeDue(job.id);
    const round = await pollDueVideoJobs(deps());
    expect(round.failed).toEqual([]);
    expect(await jobRow(job.id)).toMatchObject({ status: "completed", charged: "200", error_code: null });
    expect(await holdOf(job.id)).toMatchObject({ status: "posted", charged: "200" });
    expect(await logRows(job.requestId)).toMatchObject([{ status: 200, quota_charged: "200", error_code: null }]);
    expect(await used()).toBe(before + 200n);
  });

  it("an end statement that fails rolls the hold back with it: still pending, and the next poll completes it once", async () => {
    const before = await used();
    const job = await submit("video-a");
    await makeDue(job.id);
    await pollDueVideoJobs(deps());
    const dying = failingOnce(gw.db.pool, END_STATEMENT, () => new Error("process killed"));
    await makeDue(job.id);
    const round = await pollDueVideoJobs({ ...deps(), pool: dying });
    expect(dying.fired()).toBe(true);
    expect(round.failed).toEqual([{ jobId: job.id, err: expect.objectContaining({ message: "process killed" }) }]);
    // The hold was resolved in the transaction that failed: nothing of it remains.
    expect(await holdOf(job.id)).toMatchObject({ status: "pending", charged: null });
    expect((await jobRow(job.id)).status).toBe("in_progress");
    expect(await logRows(job.requestId)).toHaveLength(0);
    expect(await used()).toBe(before);

    // The claim lapses; another process polls the job and ends it, once.
    await makeDue(job.id);
    expect((await pollDueVideoJobs(deps(other))).failed).toEqual([]);
    // 2 s × 100.
    expect(await jobRow(job.id)).toMatchObject({ status: "completed", charged: "200" });
    expect(await holdOf(job.id)).toMatchObject({ status: "posted", charged: "200" });
    expect(await logRows(job.requestId)).toMatchObject([{ status: 200, quota_charged: "200" }]);
    expect(await used()).toBe(before + 200n);
  });

  it("a transient database error in the end is retried by the same poll", async () => {
    const before = await used();
    const job = await submit("video-fail");
    await makeDue(job.id);
    await pollDueVideoJobs(deps());
    const serialization = () => Object.assign(new pg.DatabaseError("could not serialize access", 0, "error"), { code: "40001" });
    const flaky = failingOnce(gw.db.pool, END_STATEMENT, serialization);
    const faults: unknown[] = [];
    await makeDue(job.id);
    const round = await pollDueVideoJobs({ ...deps(), pool: flaky }, { onFault: (err) => faults.push(err) });
    expect(flaky.fired()).toBe(true);
    expect(faults).toHaveLength(1);
    expect(round.failed).toEqual([]);
    expect(await jobRow(job.id)).toMatchObject({ status: "failed", charged: "0", error_code: "upstream_error" });
    expect(await holdOf(job.id)).toMatchObject({ status: "voided" });
    expect(await logRows(job.requestId)).toMatchObject([{ status: 502, quota_charged: "0", error_code: "upstream_error" }]);
    expect(await used()).toBe(before);
  });
});

describe("any number of pollers poll a job once per interval and end it once", () => {
  it("rounds racing over two processes claim a due job once, and not again before its next poll", async () => {
    const before = await used();
    const job = await submit("video-a");
    const race = () => Promise.all([gw, other, gw, other, gw, other].map((g) => pollDueVideoJobs(deps(g))));
    await makeDue(job.id);
    await race();
    expect(polls(job.upstreamId)).toBe(1);
    expect((await jobRow(job.id)).status).toBe("in_progress");
    // Whenever it comes due again, one round polls it (two at once would ask twice and make it 3).
    const racedPolls = async () => {
      await race();
      return polls(job.upstreamId);
    };
    await expect.poll(racedPolls, { timeout: 30_000, interval: 50 }).toBe(2);
    expect(await jobRow(job.id)).toMatchObject({ status: "completed", charged: "200" });
    for (let i = 0; i < 3; i++) await race();
    expect(polls(job.upstreamId)).toBe(2);
    expect(await logRows(job.requestId)).toHaveLength(1);
    expect(await holdOf(job.id)).toMatchObject({ status: "posted", charged: "200" });
    expect(await used()).toBe(before + 200n);
  });

  it("two running pollers take a job to its end, asking the upstream once per step", async () => {
    const pollers = [gw, other].map((g) => startVideoPoller(deps(g), g.services.health));
    try {
      const job = await submit("video-a");
      await expect.poll(async () => (await jobRow(job.id)).status, { timeout: 30_000, interval: 100 }).toBe("completed");
      expect(polls(job.upstreamId)).toBe(2);
      expect(await logRows(job.requestId)).toHaveLength(1);
    } finally {
      await Promise.all(pollers.map((p) => p.stop()));
    }
  });
});

describe("a claim whose poller died", () => {
  it("is taken over once it lapses, and the dead poller's late word changes nothing", async () => {
    const job = await submit("video-a");
    await makeDue(job.id);
    // A poller claims the job and dies before asking the upstream.
    const [dead] = await claimDueVideoJobs(gw.db.pool, 1, CLAIM_SECONDS, randomUUID());
    expect(dead?.id).toBe(job.id);
    await pollDueVideoJobs(deps(other));
    expect(polls(job.upstreamId)).toBe(0);

    // Once the claim lapses another process claims the job and polls it.
    const roundThen = async <T>(read: () => T | Promise<T>) => {
      await pollDueVideoJobs(deps(other));
      return read();
    };
    await expect.poll(() => roundThen(() => polls(job.upstreamId)), { timeout: 30_000 }).toBe(1);
    const taken = await jobRow(job.id);
    expect(taken).toMatchObject({ status: "in_progress", poll_claim: null });
    // The dead poller's schedule, arriving late under its lapsed claim, is refused.
    await scheduleNextPoll(gw.db.pool, dead!, "queued", new Date(), 3600);
    expect(await jobRow(job.id)).toMatchObject({ status: "in_progress", next_poll_at: taken.next_poll_at });

    await expect.poll(() => roundThen(async () => (await jobRow(job.id)).status), { timeout: 30_000 }).toBe("completed");
    expect(polls(job.upstreamId)).toBe(2);
    expect(await logRows(job.requestId)).toMatchObject([{ status: 200, quota_charged: "200" }]);
  });
});
