import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { quiesce, rowsOf } from "../helpers/metering-checks.js";
import { injectAtPool, type Statement } from "../helpers/sql-faults.js";

// A video submission through database faults (src/media/video-submit.ts): its hold and its job's row are retried
// within database.request_timeout_ms; past it the client gets 503 database_unavailable, logged as such, nothing
// charged, and the hold is voided once the database lets it. Found by the crash test: a cut answered 503 at once,
// left holds pending for a day, and logged a 500.

const REQUEST_TIMEOUT_MS = 500;

let mock: MockUpstream;
/** Every provider goes through it: the submissions the upstream received are its requests. */
let proxy: FaultProxy;
let gw: TestGateway;
let users = 0;

beforeAll(async () => {
  mock = await startMockUpstream();
  proxy = await startFaultProxy(mock.url);
  gw = await startTestGateway({
    config: {
      providers: {
        vid: { protocol: "video", base_url: proxy.baseUrl() },
        down: { protocol: "video", base_url: proxy.baseUrl({ "x-mock-status": 503 }) },
      },
      models: {
        "video-a": {
          kind: "video",
          upstream: "mock-video",
          targets: ["vid"],
          video_price: { units_per_second: 100, default_seconds: 5, max_seconds: 20 },
        },
        "video-down": {
          kind: "video",
          upstream: "mock-video",
          targets: ["down"],
          video_price: { units_per_second: 100, default_seconds: 5, max_seconds: 20 },
        },
      },
      plans: { free: { daily_tokens: 200_000, context_limit: 128_000 } },
      database: { request_timeout_ms: REQUEST_TIMEOUT_MS, query_timeout_ms: 1_000 },
      media: { video: { poll_interval_seconds: 600 } },
    },
  });
});

afterAll(async () => {
  await gw?.close();
  await proxy?.close();
  await mock?.close();
});

async function freshUser() {
  const u = await gw.services.auth.users.create({ email: `video-faults-${++users}@example.test`, password: "password-123" });
  const { key } = await gw.services.auth.apiKeys.create({ user: u.id });
  return { id: u.id, key };
}

async function submit(key: string, model = "video-a") {
  const res = await fetch(`${gw.url}/v1/video/generations`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, prompt: "a cat surfing" }),
  });
  return { res, body: (await res.json()) as { id?: string; error?: { code: string } } };
}

/** The user's durable holds (a video's), and their jobs. */
const holdsOf = (userId: string) =>
  rowsOf(
    gw.db.pool,
    "select h.status, h.amount::text, (select count(*)::int from video_jobs j where j.hold_id = h.id) as jobs from quota_holds h join quota_accounts a on a.id = h.account_id where a.user_id = $1 and h.lease_id is null",
    [userId],
  );
const logOf = async (res: Response) => {
  await quiesce(gw);
  return rowsOf(gw.db.pool, "select status, error_code, quota_charged::text from request_logs where request_id = $1", [
    res.headers.get("x-request-id"),
  ]);
};

const reserving = (s: Statement) => s.name === "quota_durable_reserve";
const storingJob = (s: Statement) => /^insert into video_jobs/.test(s.text);
const voiding = (s: Statement) => s.name === "quota_durable_resolve";

describe("a video submission under database faults", () => {
  it.each([
    { what: "its hold", when: reserving, code: null },
    { what: "its job's row", when: storingJob, code: "57P01" },
  ])("is accepted through a blip on $what: retried, stored once, held once", async ({ when, code }) => {
    const user = await freshUser();
    const fault = injectAtPool(gw.db.pool, { code, forMs: 30_000, times: 2, when });
    await fault.applied;
    const { res, body } = await submit(user.key);
    await fault.over;
    expect(fault.stats().refused).toBe(2);
    expect(res.status).toBe(200);
    expect(await holdsOf(user.id)).toEqual([{ status: "pending", amount: "500", jobs: 1 }]);
    expect((await rowsOf(gw.db.pool, "select count(*)::int as n from video_jobs where id = $1", [body.id])).map((r) => r.n)).toEqual([1]);
  });

  it.each([
    { what: "its hold", when: reserving, code: null, accepted: false },
    { what: "its job's row, after the upstream accepted", when: storingJob, code: "25006", accepted: true },
  ])("answers 503 when $what cannot be stored in time, charges nothing and voids the hold", async ({ when, code, accepted }) => {
    const user = await freshUser();
    const submitted = proxy.requests.length;
    const fault = injectAtPool(gw.db.pool, { code, forMs: REQUEST_TIMEOUT_MS * 3, when });
    await fault.applied;
    const { res, body } = await submit(user.key);
    expect(res.status).toBe(503);
    expect(body.error).toMatchObject({ code: "database_unavailable" });
    expect(res.headers.get("retry-after")).toBe("2");
    expect(proxy.requests.length - submitted).toBe(accepted ? 1 : 0);
    await fault.over;
    // Voided once the database lets it (a hold never taken is simply absent); no job to poll or bill.
    await expect
      .poll(() => holdsOf(user.id), { timeout: 20_000, interval: 100 })
      .toEqual(accepted ? [{ status: "voided", amount: "500", jobs: 0 }] : []);
    expect(await logOf(res)).toEqual([{ status: 503, error_code: "database_unavailable", quota_charged: "0" }]);
  });

  it("voids the hold of a job no upstream accepted even while the database refuses the void", async () => {
    const user = await freshUser();
    const fault = injectAtPool(gw.db.pool, { code: null, forMs: REQUEST_TIMEOUT_MS * 3, when: voiding });
    await fault.applied;
    const { res } = await submit(user.key, "video-down");
    expect(res.status).toBe(502);
    await fault.over;
    await expect.poll(() => holdsOf(user.id), { timeout: 20_000, interval: 100 }).toEqual([{ status: "voided", amount: "500", jobs: 0 }]);
    expect(await logOf(res)).toMatchObject([{ status: 502, quota_charged: "0" }]);
  });
});
