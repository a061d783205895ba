import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pollDueVideoJobs } from "../../src/media/video-poller.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { videoPollDeps } from "../../src/runtime/services.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { quiesce, rowsOf } from "../helpers/metering-checks.js";

// Video jobs end to end over raw HTTP: submission holds the quota durably before the upstream call, a poll
// settles or releases the hold exactly once, and the request log gets one row per submission. How polls are
// claimed, and what a poll that dies or fails does, is test/integration/video-poller.test.ts.

let mock: MockUpstream;
let proxy: FaultProxy;
let gw: TestGateway;
let owner: { id: string; key: string };
let other: { id: string; key: string };
let tiny: { id: string; key: string };

// Answers read as loosely as a client reads them.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const price = { units_per_second: 100, default_seconds: 5, max_seconds: 20 };

beforeAll(async () => {
  mock = await startMockUpstream();
  proxy = await startFaultProxy(mock.url);
  gw = await startTestGateway({ config: config() });
  const user = async (email: string, plan?: string) => {
    const u = await gw.services.auth.users.create({ email, password: "password-123", plan });
    const { key } = await gw.services.auth.apiKeys.create({ user: u.id });
    return { id: u.id, key };
  };
  owner = await user("video-owner@example.test");
  other = await user("video-other@example.test");
  tiny = await user("video-tiny@example.test", "tiny");
});

afterAll(async () => {
  await gw?.close();
  await proxy?.close();
  await mock?.close();
});

function config() {
  return {
    providers: {
      vid: { protocol: "video" as const, base_url: mock.baseUrl },
      vidFail: { protocol: "video" as const, base_url: proxy.baseUrl({ "x-mock-video": "fail" }) },
      vidNoDuration: { protocol: "video" as const, base_url: proxy.baseUrl({ "x-mock-video": "no-duration" }) },
      broken: { protocol: "video" as const, base_url: proxy.baseUrl({ "x-mock-status": 503 }) },
    },
    models: {
      // 100 units per second × 1.5 = 150 units per second of video.
      "video-a": { kind: "video" as const, upstream: "mock-video", targets: ["vid"], token_multiplier: 1.5, video_price: price },
      "video-fail": { kind: "video" as const, upstream: "mock-video", targets: ["vidFail"], video_price: price },
      "video-quiet": { kind: "video" as const, upstream: "mock-video", targets: ["vidNoDuration"], video_price: price },
      "video-fallback": { kind: "video" as const, upstream: "mock-video", targets: ["broken", "vid"], video_price: price },
      "video-down": { kind: "video" as const, upstream: "mock-video", targets: ["broken"], video_price: price },
      chatty: { kind: "chat" as const, upstream: "mock-gpt-small", targets: ["vid"] },
    },
    plans: {
      free: { daily_tokens: 200_000, context_limit: 128_000 },
      tiny: { daily_tokens: 1000, context_limit: 128_000 },
    },
    media: { download: { allow_private: ["127.0.0.1"] }, video: { poll_interval_seconds: 1 } },
  };
}

async function submit(body: unknown, key = owner.key) {
  const res = await fetch(`${gw.url}/v1/video/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { res, body: (await res.json()) as Json };
}

async function read(id: string, key = owner.key, suffix = "") {
  return fetch(`${gw.url}/v1/video/generations/${id}${suffix}`, { headers: { authorization: `Bearer ${key}` } });
}

const jobRow = async (id: string) => (await rowsOf(gw.db.pool, "select * from video_jobs where id = $1", [id]))[0]!;
const holdOf = async (id: string) =>
  (await rowsOf(gw.db.pool, "select h.* from quota_holds h join video_jobs j on j.hold_id = h.id where j.id = $1", [id]))[0]!;
const logRows = async (requestId: string) => rowsOf(gw.db.pool, "select * from request_logs where request_id = $1", [requestId]);
const used = async (userId: string) => (await gw.services.ledger.balance({ kind: "daily_allowance", userId, base: 200_000n })).used;

/** Makes the job due now (as if its poll interval had passed) and runs one round of this process's poller. */
async function pollNow(id: string) {
  await gw.db.pool.query("update video_jobs set next_poll_at = now() where id = $1", [id]);
  const round = await pollDueVideoJobs(videoPollDeps(gw.services));
  expect(round.failed).toEqual([]);
  return round;
}

describe("POST /v1/video/generations", () => {
  it("answers the gateway's own job, holds the quota, and the poller settles it once", async () => {
    const before = await used(owner.id);
    const { res, body } = await submit({ model: "video-a", prompt: "a cat surfing", duration: 4, n: 2 });
    expect(res.status).toBe(200);
    expect(body).toMatchObject({
      object: "video.generation",
      status: "queued",
      model: "video-a",
      n: 2,
      duration: 4,
      quota_held: 1200,
      quota_charged: null,
      videos: [],
      error: null,
    });
    const text = JSON.stringify(body);
    expect(text).not.toContain("vid_");
    expect(text).not.toContain("mock-video");
    const requestId = res.headers.get("x-request-id")!;
    expect(await holdOf(body.id)).toMatchObject({ status: "pending", amount: "1200", request_id: `video:${body.id}` });

    await pollNow(body.id);
    expect((await jobRow(body.id)).status).toBe("in_progress");
    expect(await logRows(requestId)).toHaveLength(0);
    await pollNow(body.id);

    const row = await jobRow(body.id);
    expect(row).toMatchObject({ status: "completed", charged: "1200" });
    expect(await holdOf(body.id)).toMatchObject({ status: "posted", charged: "1200" });
    expect(await used(owner.id)).toBe(before + 1200n);
    const logs = await logRows(requestId);
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({
      status: 200,
      quota_charged: "1200",
      public_model: "video-a",
      route: "/v1/video/generations",
      usage_source: "upstream",
    });

    const seen = (await (await read(body.id)).json()) as Json;
    expect(seen).toMatchObject({ status: "completed", quota_charged: 1200 });
    expect(seen.videos).toEqual([
      { url: `/v1/video/generations/${body.id}/content/0`, duration: 4 },
      { url: `/v1/video/generations/${body.id}/content/1`, duration: 4 },
    ]);
    const video = await read(body.id, owner.key, "/content/1");
    expect(video.status).toBe(200);
    expect(video.headers.get("content-type")).toBe("video/mp4");
    expect(
      Buffer.from(await video.arrayBuffer())
        .subarray(4, 8)
        .toString("latin1"),
    ).toBe("ftyp");

    // An ended job is never claimed again: no second effect.
    await pollNow(body.id);
    expect(await used(owner.id)).toBe(before + 1200n);
    expect(await logRows(requestId)).toHaveLength(1);
  });

  it("voids the hold of a job the upstream failed, and logs it as failed", async () => {
    const before = await used(owner.id);
    const { res, body } = await submit({ model: "video-fail", prompt: "a dog" });
    expect(res.status).toBe(200);
    await pollNow(body.id);
    expect((await jobRow(body.id)).status).toBe("in_progress");
    await pollNow(body.id);
    expect(await holdOf(body.id)).toMatchObject({ status: "voided" });
    expect(await used(owner.id)).toBe(before);
    const logs = await logRows(res.headers.get("x-request-id")!);
    expect(logs).toHaveLength(1);
    expect(logs[0]).toMatchObject({ status: 502, error_code: "upstream_error", quota_charged: "0" });
    const seen = (await (await read(body.id)).json()) as Json;
    expect(seen).toMatchObject({ status: "failed", quota_charged: 0, videos: [], error: { code: "upstream_error" } });
    expect((await read(body.id, owner.key, "/content/0")).status).toBe(404);
  });

  it("charges the requested duration when the provider reports none", async () => {
    const { body } = await submit({ model: "video-quiet", prompt: "rain", duration: 3 });
    await pollNow(body.id);
    await pollNow(body.id);
    // 3 s × 100.
    expect(await holdOf(body.id)).toMatchObject({ status: "posted", amount: "300", charged: "300" });
  });

  it("falls back before the upstream accepted, and records the path", async () => {
    const { res, body } = await submit({ model: "video-fallback", prompt: "waves" });
    expect(res.status).toBe(200);
    expect(await jobRow(body.id)).toMatchObject({ provider: "vid", fallback_path: ["broken"] });
  });

  it("voids the hold when no upstream accepts, answering as the metering path does", async () => {
    const { res, body } = await submit({ model: "video-down", prompt: "waves" });
    expect(res.status).toBe(502);
    expect(body.error).toMatchObject({ code: "upstream_error" });
    expect(JSON.stringify(body)).not.toContain("mock");
    // Its hold belongs to no job and is no longer pending.
    const orphans = await rowsOf(
      gw.db.pool,
      "select status from quota_holds h where h.request_id like 'video:%' and not exists (select 1 from video_jobs j where j.hold_id = h.id)",
      [],
    );
    expect(orphans).toEqual([{ status: "voided" }]);
    await quiesce(gw);
    expect(await logRows(res.headers.get("x-request-id")!)).toMatchObject([
      { status: 502, error_code: "upstream_error", quota_charged: "0" },
    ]);
  });

  it("refuses a job the day's quota cannot hold with the usual 429", async () => {
    // 5 s × 2 × 100 = 1,000 fits exactly; 6 s does not.
    const { res, body } = await submit({ model: "video-fail", prompt: "x", duration: 6, n: 2 }, tiny.key);
    expect(res.status).toBe(429);
    expect(body.error).toMatchObject({ code: "insufficient_quota", type: "rate_limit_error" });
    expect(res.headers.get("retry-after")).toMatch(/^\d+$/);
    await quiesce(gw);
    expect(await logRows(res.headers.get("x-request-id")!)).toMatchObject([{ status: 429, error_code: "insufficient_quota" }]);
  });

  it.each([
    [{ model: "video-a", prompt: "x", n: 0 }, "n"],
    [{ model: "video-a", prompt: "x", sound: "loud" }, "sound"],
    [{ model: "video-a", prompt: "x", tier: "8k" }, "tier"],
    [{ model: "video-a", prompt: "x", voice_list: [{ voice_id: "a" }, { voice_id: "b" }, { voice_id: "c" }] }, "voice_list"],
    [{ model: "video-a", prompt: "x", voice_list: [{ id: "a" }] }, "voice_list[0].voice_id"],
    [{ model: "video-a", prompt: { text: "x" } }, "prompt"],
    [{ model: "video-a", prompt: "x", duration: 21 }, "duration"],
    [{ model: "video-a", prompt: "x", cfg: 2 }, "cfg"],
    [{ model: "video-a", prompt: "x", provider_options: { model: "other" } }, "provider_options.model"],
    [{ model: "chatty", prompt: "x" }, "model"],
  ])("refuses %j with a 400 naming %s", async (input, param) => {
    const { res, body } = await submit(input);
    expect(res.status).toBe(400);
    expect(body.error).toMatchObject({ type: "invalid_request_error", param });
  });

  it("keeps the model a refused request named in the request log, and nothing that is not a name", async () => {
    const named = await submit({ model: "video-a", prompt: "x", duration: 21 });
    const notAName = await submit({ model: ["video-a"], prompt: "x" });
    expect([named.res.status, notAName.res.status]).toEqual([400, 400]);
    await quiesce(gw);
    expect((await logRows(named.body.error.request_id as string))[0]).toMatchObject({ public_model: "video-a", status: 400 });
    expect((await logRows(notAName.body.error.request_id as string))[0]).toMatchObject({ public_model: "", status: 400 });
  });

  it("refuses a client's own upstream key (a job is polled later, by any process)", async () => {
    const res = await fetch(`${gw.url}/v1/video/generations`, {
      method: "POST",
      headers: { authorization: `Bearer ${owner.key}`, "content-type": "application/json", "x-upstream-api-key": "sk-own" },
      body: JSON.stringify({ model: "video-a", prompt: "x" }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as Json).error.code).toBe("upstream_key_not_accepted");
  });
});

describe("GET /v1/video/generations/{id}", () => {
  it("answers 404 for another user's job exactly as for one that does not exist", async () => {
    const { body } = await submit({ model: "video-a", prompt: "private" });
    const theirs = await read(body.id, other.key);
    const none = await read("00000000-0000-4000-8000-000000000000", other.key);
    const garbage = await read("not-a-uuid", other.key);
    for (const res of [theirs, none, garbage]) expect(res.status).toBe(404);
    const [a, b] = [(await theirs.json()) as Json, (await none.json()) as Json];
    expect(a.error.code).toBe(b.error.code);
    expect((await read(body.id, other.key, "/content/0")).status).toBe(404);
    expect((await read(body.id)).status).toBe(200);
  });
});
