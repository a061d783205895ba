import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pollDueVideoJobs } from "../../src/media/video-poller.js";
import { mockVideoBytes } from "../../src/mock-upstream/openai-videos.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { videoPollDeps } from "../../src/runtime/services.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { quiesce, rowsOf } from "../helpers/metering-checks.js";

// Video jobs on OpenAI's video API (docs/api.md, "Video"): the unified request mapped to `POST /v1/videos`, the
// job polled at `GET /v1/videos/{id}` until it ends, its video streamed from `/v1/videos/{id}/content` with the
// provider's key. The durable hold, the one charge per completed job and the fallback before acceptance work as
// on the `video` protocol (test/integration/video-jobs.test.ts).

const MOCK_KEY = "sk-mock-videos";

let mock: MockUpstream;
let proxy: FaultProxy;
let gw: TestGateway;
let upstream: OpenAI;
let owner: { id: string; key: string };

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = Record<string, any>;

const price = { units_per_second: 100, default_seconds: 4, max_seconds: 12 };

beforeAll(async () => {
  mock = await startMockUpstream({ apiKey: MOCK_KEY });
  proxy = await startFaultProxy(mock.url);
  upstream = new OpenAI({ apiKey: MOCK_KEY, baseURL: mock.baseUrl, maxRetries: 0 });
  gw = await startTestGateway({ config: config() });
  const u = await gw.services.auth.users.create({ email: "video-openai@example.test", password: "password-123" });
  owner = { id: u.id, key: (await gw.services.auth.apiKeys.create({ user: u.id })).key };
});

afterAll(async () => {
  await gw?.close();
  await proxy?.close();
  await mock?.close();
});

function config() {
  const openai = (faults?: Record<string, string | number>) => ({
    protocol: "openai" as const,
    base_url: faults ? proxy.baseUrl(faults) : mock.baseUrl,
    api_key: MOCK_KEY,
  });
  const sora = (targets: string[]) => ({ kind: "video" as const, upstream: "sora-2", targets, video_price: price });
  return {
    providers: {
      oa: openai(),
      oaFail: openai({ "x-mock-video": "fail" }),
      oaNever: openai({ "x-mock-video": "never" }),
      oaNotVideo: openai({ "x-mock-video": "not-video" }),
      oaGone: openai({ "x-mock-video": "gone" }),
      down: openai({ "x-mock-status": 503 }),
      vid: { protocol: "video" as const, base_url: mock.baseUrl, api_key: MOCK_KEY },
    },
    models: {
      // 100 units per second × 1.5 = 150 units per second of video.
      sora: { ...sora(["oa"]), token_multiplier: 1.5 },
      "sora-fail": sora(["oaFail"]),
      "sora-never": sora(["oaNever"]),
      "sora-not-video": sora(["oaNotVideo"]),
      "sora-gone": sora(["oaGone"]),
      "sora-fallback": sora(["down", "oa"]),
      // A `video`-protocol target first, OpenAI's as its fallback: a request both can take.
      "mixed-fallback": { kind: "video" as const, upstream: "sora-2", targets: ["down", "vid"], video_price: price },
    },
    plans: { free: { daily_tokens: 200_000, context_limit: 128_000 } },
    media: { video: { poll_interval_seconds: 1 } },
  };
}

async function submit(body: unknown) {
  const res = await fetch(`${gw.url}/v1/video/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${owner.key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { res, body: (await res.json()) as Json };
}

const read = (id: string, suffix = "") =>
  fetch(`${gw.url}/v1/video/generations/${id}${suffix}`, { headers: { authorization: `Bearer ${owner.key}` } });
const jobRow = async (id: string) => (await rowsOf(gw.db.pool, "select * from video_jobs where id = $1", [id]))[0]!;
const holdOf = async (id: string) =>
  (await rowsOf(gw.db.pool, "select h.* from quota_holds h join video_jobs j on j.hold_id = h.id where j.id = $1", [id]))[0]!;
const logRows = async (requestId: string) => rowsOf(gw.db.pool, "select * from request_logs where request_id = $1", [requestId]);
const used = async () => (await gw.services.ledger.balance({ kind: "daily_allowance", userId: owner.id, base: 200_000n })).used;

/** Makes the job due now (as if its poll interval had passed) and runs one round of this process's poller. */
async function pollNow(id: string) {
  await gw.db.pool.query("update video_jobs set next_poll_at = now() where id = $1", [id]);
  const round = await pollDueVideoJobs(videoPollDeps(gw.services));
  expect(round.failed).toEqual([]);
}

/** A job submitted and polled until the mock says it ended (queued → in_progress → completed or failed). */
async function ended(body: Json) {
  const submitted = await submit(body);
  expect(submitted.res.status).toBe(200);
  await pollNow(submitted.body.id);
  await pollNow(submitted.body.id);
  return { ...submitted, id: submitted.body.id as string, requestId: submitted.res.headers.get("x-request-id")! };
}

describe("video jobs on an openai target", () => {
  it("submits, polls to completion, charges once by the seconds made, and streams the provider's bytes", async () => {
    const before = await used();
    const { res, body } = await submit({ model: "sora", prompt: "a cat surfing", duration: 8, aspect_ratio: "16:9", quality: "high" });
    expect(res.status).toBe(200);
    // 8 s × 150.
    expect(body).toMatchObject({ object: "video.generation", status: "queued", model: "sora", n: 1, duration: 8, quota_held: 1200 });
    expect(JSON.stringify(body)).not.toMatch(/video_|sora-2/);
    const requestId = res.headers.get("x-request-id")!;
    expect(await holdOf(body.id)).toMatchObject({ status: "pending", amount: "1200" });

    await pollNow(body.id);
    expect((await jobRow(body.id)).status).toBe("in_progress");
    await pollNow(body.id);
    const row = await jobRow(body.id);
    expect(row).toMatchObject({ status: "completed", charged: "1200", provider: "oa", videos: [{ content: "provider", duration: 8 }] });
    expect(await holdOf(body.id)).toMatchObject({ status: "posted", charged: "1200" });
    expect(await used()).toBe(before + 1200n);
    expect(await logRows(requestId)).toMatchObject([{ status: 200, quota_charged: "1200", public_model: "sora" }]);

    // What the upstream was asked for: the mapped fields of OpenAI's API.
    const upstreamId = row.upstream_job_id as string;
    expect(await upstream.videos.retrieve(upstreamId)).toMatchObject({
      model: "sora-2",
      prompt: "a cat surfing",
      seconds: "8",
      size: "1280x720",
    });

    const seen = (await (await read(body.id)).json()) as Json;
    expect(seen).toMatchObject({
      status: "completed",
      quota_charged: 1200,
      videos: [{ url: `/v1/video/generations/${body.id}/content/0`, duration: 8 }],
    });
    const video = await read(body.id, "/content/0");
    expect(video.status).toBe(200);
    expect(video.headers.get("content-type")).toBe("video/mp4");
    expect(Buffer.from(await video.arrayBuffer()).equals(mockVideoBytes(upstreamId))).toBe(true);
    expect((await read(body.id, "/content/1")).status).toBe(404);

    // An ended job is never claimed again: no second charge.
    await pollNow(body.id);
    expect(await used()).toBe(before + 1200n);
    expect(await logRows(requestId)).toHaveLength(1);
  });

  it("voids the hold of a job OpenAI failed, showing none of its error", async () => {
    const before = await used();
    const { id, requestId } = await ended({ model: "sora-fail", prompt: "a dog" });
    expect(await holdOf(id)).toMatchObject({ status: "voided" });
    expect(await used()).toBe(before);
    expect(await logRows(requestId)).toMatchObject([{ status: 502, error_code: "upstream_error", quota_charged: "0" }]);
    const seen = (await (await read(id)).json()) as Json;
    expect(seen).toMatchObject({ status: "failed", quota_charged: 0, videos: [], error: { code: "upstream_error" } });
    expect(JSON.stringify(seen)).not.toMatch(/Mock upstream|video_generation_failed/);
  });

  it("ends a job that never ends at the job timeout, uncharged", async () => {
    const before = await used();
    const { id, requestId } = await ended({ model: "sora-never", prompt: "a snail" });
    expect((await jobRow(id)).status).toBe("in_progress");
    // As if media.video.job_timeout_seconds had passed since the submission.
    await gw.db.pool.query("update video_jobs set deadline = now() - interval '1 second' where id = $1", [id]);
    await pollNow(id);
    expect(await jobRow(id)).toMatchObject({ status: "failed", error_code: "upstream_timeout", charged: "0" });
    expect(await holdOf(id)).toMatchObject({ status: "voided" });
    expect(await used()).toBe(before);
    expect(await logRows(requestId)).toMatchObject([{ status: 504, error_code: "upstream_timeout", quota_charged: "0" }]);
  });

  it("answers 502 for content that is not a video, without the upstream's text", async () => {
    const { id } = await ended({ model: "sora-not-video", prompt: "a page" });
    const res = await read(id, "/content/0");
    expect(res.status).toBe(502);
    const text = await res.text();
    expect(JSON.parse(text).error).toMatchObject({ code: "upstream_error" });
    expect(text).not.toMatch(/doctype|<p>|Mock upstream/i);
  });

  it("answers 410 video_expired for content the provider no longer has", async () => {
    const { id } = await ended({ model: "sora-gone", prompt: "a ghost" });
    const res = await read(id, "/content/0");
    expect(res.status).toBe(410);
    expect(((await res.json()) as Json).error).toMatchObject({ code: "video_expired", type: "invalid_request_error" });
  });

  it("falls back before acceptance: a target down, the openai target accepts", async () => {
    const { res, body } = await submit({ model: "sora-fallback", prompt: "waves" });
    expect(res.status).toBe(200);
    expect(await jobRow(body.id)).toMatchObject({ provider: "oa", fallback_path: ["down"] });
    const mixed = await submit({ model: "mixed-fallback", prompt: "waves", duration: 4 });
    expect(mixed.res.status).toBe(200);
    expect(await jobRow(mixed.body.id)).toMatchObject({ provider: "vid", fallback_path: ["down"] });
  });

  it.each([
    [{ model: "sora", prompt: "x", duration: 5 }, "duration"],
    [{ model: "sora", prompt: "x", duration: 16 }, "duration"],
    [{ model: "sora", prompt: "x", n: 2 }, "n"],
    [{ model: "sora", prompt: "x", resolution: "1080p" }, "resolution"],
    [{ model: "sora", prompt: "x", aspect_ratio: "4:3" }, "aspect_ratio"],
    [{ model: "sora", prompt: "x", input_video: "https://example.test/a.mp4" }, "input_video"],
    [{ model: "sora", prompt: "x", voice_list: [{ voice_id: "a" }] }, "voice_list"],
    [{ model: "sora", prompt: "x", input_image: "https://example.test/a.png", image_url: "https://example.test/b.png" }, "image_url"],
    [{ model: "sora", prompt: "x", provider_options: { model: "sora-2-pro" } }, "provider_options.model"],
  ])("refuses %j with a 400 naming %s, holding nothing", async (input, param) => {
    const before = await used();
    const { res, body } = await submit(input);
    expect(res.status).toBe(400);
    expect(body.error).toMatchObject({ type: "invalid_request_error", code: "invalid_value", param });
    await quiesce(gw);
    expect(await used()).toBe(before);
  });
});
