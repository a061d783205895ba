import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { ManualClock } from "../../src/time/clock.js";
import { reconcileLedger } from "../../src/quota/index.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";
import { spendDay } from "../helpers/spend.js";

// Automatic reserve resets (docs/billing.md, "Automatic resets") through HTTP: real sessions set the flag, real
// API keys send chat requests through two gateways sharing one database, against the mock upstream.

const PASSWORD = "password-123-autoreset";
const DAILY = 1000;
const WEEKLY = 2;
const UPSTREAM = "mock-gpt-small";

let db: TestDatabase;
let mock: MockUpstream;
let gw: TestGateway;
let other: TestGateway;
let clock: ManualClock;
let users = 0;

interface Resets {
  auto_reset_enabled: boolean;
  weekly_left: number;
  gifted_left: number;
  uses: { kind: string; restored: number; trigger: string; day: string }[];
}

interface Quota {
  allowance: number;
  restored: number;
  used: number;
  reserved: number;
  remaining: number;
}

interface User {
  id: string;
  email: string;
  session: Record<string, string>;
  key: Record<string, string>;
}

function call(on: { url: string }, method: string, route: string, headers: Record<string, string>, body?: unknown) {
  const init: RequestInit = { method, headers: { ...headers, "content-type": "application/json" } };
  if (body !== undefined) init.body = JSON.stringify(body);
  return fetch(`${on.url}${route}`, init);
}

async function newUser(auto: boolean): Promise<User> {
  const email = `auto-reset-${++users}@example.test`;
  const user = await gw.services.auth.users.create({ email, password: PASSWORD, plan: "std" });
  const { token } = await logIn(gw.url, email, PASSWORD);
  const session = { authorization: `Bearer ${token}` };
  const { key } = await gw.services.auth.apiKeys.create({ user: email });
  if (auto) expect((await call(gw, "PUT", "/api/v1/user/quota-resets", session, { auto_reset_enabled: true })).status).toBe(200);
  return { id: user.id, email, session, key: { authorization: `Bearer ${key}` } };
}

const resets = async (u: User) => (await (await call(gw, "GET", "/api/v1/user/quota-resets", u.session)).json()) as Resets;
const quota = async (u: User) => (await (await call(gw, "GET", "/api/v1/user/quota", u.session)).json()) as Quota;

/** The day once the requests answered have settled (a settlement commits shortly after its answer is sent). */
async function settledQuota(u: User): Promise<Quota> {
  for (;;) {
    await gw.services.ledger.flush();
    await other.services.ledger.flush();
    const q = await quota(u);
    if (q.reserved === 0) return q;
    await sleep(20);
  }
}

/** A chat request; its hold is its prompt's tokens plus `max_tokens` (multiplier 1, completion ratio 1). */
const chat = (u: User, opts: { model?: string; maxTokens?: number; on?: TestGateway } = {}) =>
  call(opts.on ?? gw, "POST", "/v1/chat/completions", u.key, {
    model: opts.model ?? "chat",
    messages: [{ role: "user", content: "hi" }],
    max_tokens: opts.maxTokens ?? 5,
  });

/** Spends today's allowance down to `remaining` (posted through the ledger, as settled requests are). */
async function spendTo(u: User, remaining: number) {
  const q = await settledQuota(u);
  await spendDay(gw.services, u.id, DAILY, q.remaining - remaining);
  expect((await quota(u)).remaining).toBe(remaining);
}

const resetHolds = async (userId: string) =>
  (
    await db.pool.query<{ n: number }>(
      `select count(*)::int as n from quota_holds h join quota_accounts a on a.id = h.account_id
        where a.user_id = $1 and a.kind in ('weekly_resets', 'gifted_resets')`,
      [userId],
    )
  ).rows[0]!.n;

const errorCode = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;

beforeAll(async () => {
  db = await createTestDatabase();
  mock = await startMockUpstream();
  clock = new ManualClock("2026-11-26T12:00:00Z");
  const config = {
    providers: {
      mock: { protocol: "openai" as const, base_url: mock.baseUrl },
      vid: { protocol: "video" as const, base_url: mock.baseUrl },
    },
    models: {
      chat: { kind: "chat" as const, upstream: UPSTREAM, targets: ["mock"], completion_ratio: 1 },
      "free-chat": { kind: "chat" as const, upstream: UPSTREAM, targets: ["mock"], token_multiplier: 0 },
      // 100 units a second: a 2-second video holds 200.
      video: {
        kind: "video" as const,
        upstream: "mock-video",
        targets: ["vid"],
        video_price: { units_per_second: 100, default_seconds: 2, max_seconds: 4 },
      },
    },
    plans: { std: { daily_tokens: DAILY, weekly_resets: WEEKLY, context_limit: 128_000 } },
    default_plan: "std",
  };
  gw = await startTestGateway({ db, clock, config });
  other = await startTestGateway({ db, clock, config });
});

afterAll(async () => {
  await other?.close();
  await gw?.close();
  await mock?.close();
  await db?.drop();
});

describe("the automatic reset", () => {
  it("is used by the next request once fewer than 100 units remain, which proceeds on the restored allowance", async () => {
    const u = await newUser(true);
    await spendTo(u, 100);
    // At 100 the threshold is not reached: the request is served from what remains.
    expect((await chat(u)).status).toBe(200);
    expect((await resets(u)).uses).toEqual([]);
    const below = (await settledQuota(u)).remaining;
    expect(below).toBeLessThan(100);

    const res = await chat(u);
    expect(res.status).toBe(200);
    const after = await resets(u);
    expect(after.weekly_left).toBe(WEEKLY - 1);
    expect(after.uses).toMatchObject([{ kind: "weekly", trigger: "automatic" }]);
    // What was posted when the reset was used (the first request's charge, if it had settled by then).
    expect(after.uses[0]!.restored).toBeGreaterThanOrEqual(DAILY - 100);
    expect(after.uses[0]!.restored).toBeLessThanOrEqual(DAILY - below);
    const q = await settledQuota(u);
    expect(q.restored).toBe(after.uses[0]!.restored);
    expect(q.remaining).toBeGreaterThan(DAILY - 100);
    expect(q.allowance + q.restored - q.used - q.reserved).toBe(q.remaining);
  });

  it("is not used with the flag off: the request is served from what remains, then refused as usual", async () => {
    const u = await newUser(false);
    await spendTo(u, 30);
    expect((await chat(u)).status).toBe(200);
    const refused = await chat(u, { maxTokens: 100 });
    expect(refused.status).toBe(429);
    expect(await errorCode(refused)).toBe("insufficient_quota");
    expect(await resets(u)).toMatchObject({ weekly_left: WEEKLY, uses: [] });
  });

  it("restores an overdrawn day too", async () => {
    const u = await newUser(true);
    await spendTo(u, -400);
    expect((await chat(u)).status).toBe(200);
    expect((await resets(u)).uses).toMatchObject([{ trigger: "automatic", restored: DAILY + 400 }]);
  });

  it("uses the week's resets before the gifts; with none left the usual 429, and a grant is used by a later request", async () => {
    const u = await newUser(true);
    for (let i = 0; i < WEEKLY; i++) {
      await spendTo(u, 50);
      expect((await chat(u)).status).toBe(200);
    }
    expect(await resets(u)).toMatchObject({ weekly_left: 0, gifted_left: 0 });
    await spendTo(u, 10);
    const refused = await chat(u, { maxTokens: 50 });
    expect(refused.status).toBe(429);
    expect(await errorCode(refused)).toBe("insufficient_quota");
    expect(refused.headers.get("retry-after")).not.toBeNull();

    await gw.services.resets.grant(u.id, { count: 1 }, "cli");
    // A lease that found no reset tries again after a second (docs/billing.md, "Automatic resets").
    await sleep(1100);
    expect((await chat(u, { maxTokens: 50 })).status).toBe(200);
    const after = await resets(u);
    expect(after.gifted_left).toBe(0);
    expect(after.uses.map((x) => x.kind)).toEqual(["gifted", "weekly", "weekly"]);
  });

  it("is used by a video submission too (a durable hold), once", async () => {
    const u = await newUser(true);
    await spendTo(u, 80);
    const submit = () => call(gw, "POST", "/v1/video/generations", u.key, { model: "video", prompt: "a cat surfing" });
    const res = await submit();
    expect(res.status).toBeLessThan(300);
    const after = await resets(u);
    expect(after.uses).toMatchObject([{ trigger: "automatic", restored: DAILY - 80 }]);
    // Now far above the threshold: the next submission uses none.
    expect((await submit()).status).toBeLessThan(300);
    expect((await resets(u)).uses).toHaveLength(1);
  });

  it("is not used when even the restored allowance could not hold the request", async () => {
    const u = await newUser(true);
    await spendTo(u, 40);
    const refused = await chat(u, { maxTokens: DAILY + 10 });
    expect(refused.status).toBe(429);
    expect(await resets(u)).toMatchObject({ weekly_left: WEEKLY, uses: [] });
    expect(await resetHolds(u.id)).toBe(0);
  });

  it("is not used by a free model's request (token_multiplier 0)", async () => {
    const u = await newUser(true);
    await spendTo(u, 20);
    for (let i = 0; i < 3; i++) expect((await chat(u, { model: "free-chat" })).status).toBe(200);
    expect(await resets(u)).toMatchObject({ weekly_left: WEEKLY, uses: [] });
    expect((await settledQuota(u)).remaining).toBe(20);
  });

  it("is not used by trusted read-only requests", async () => {
    const u = await newUser(true);
    await spendTo(u, 20);
    for (const [route, headers] of [
      ["/v1/models", u.key],
      ["/v1/models/chat", u.key],
      ["/native/v1/models", u.key],
      ["/api/v1/user/quota", u.session],
      ["/api/v1/user/quota-resets", u.session],
      ["/api/v1/user/requests", u.session],
    ] as const) {
      expect((await call(gw, "GET", route, headers)).status, route).toBe(200);
    }
    expect(await resets(u)).toMatchObject({ weekly_left: WEEKLY, uses: [] });
  });
});

describe("racing at the threshold", () => {
  it("50 requests over two gateways, 60 units left and two resets: exactly one reset, never more admitted than one restoration allows", async () => {
    const u = await newUser(true);
    await spendTo(u, 60);
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => chat(u, { on: i % 2 === 0 ? gw : other })));
    expect(answers.map((a) => a.status).filter((s) => s !== 200)).toEqual([]);
    await gw.services.ledger.flush();
    await other.services.ledger.flush();
    const after = await resets(u);
    expect(after.weekly_left).toBe(WEEKLY - 1);
    expect(after.uses).toHaveLength(1);
    expect(await resetHolds(u.id)).toBe(1);
    const q = await settledQuota(u);
    expect(q.used).toBeLessThanOrEqual(q.allowance + q.restored);
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  // The two are serialised by the day's lock, and neither restores what the other did. The manual use first: the
  // day is restored, the automatic one finds nothing to do. The automatic one first: the manual use restores what
  // the racing requests spent after it (every answer's charge commits before its last byte), or finds nothing
  // spent yet (409). The user asked for it, so a second reset for spending after the first is a right outcome;
  // restoring a unit twice is the wrong one.
  it("a manual use racing the automatic one: no unit restored twice", async () => {
    const u = await newUser(true);
    await spendTo(u, 60);
    const [manual, ...served] = await Promise.all([
      call(other, "POST", "/api/v1/user/quota-resets/use", u.session),
      ...Array.from({ length: 6 }, (_, i) => chat(u, { on: i % 2 === 0 ? gw : other })),
    ]);
    expect(served.map((a) => a.status)).toEqual(Array<number>(6).fill(200));
    expect([200, 409]).toContain(manual!.status);
    const after = await resets(u);
    const triggers = after.uses.map((use) => use.trigger).sort();
    const q = await settledQuota(u);
    if (manual!.status === 409) expect(triggers).toEqual(["automatic"]);
    else if (triggers.length === 2) {
      expect(triggers).toEqual(["automatic", "manual"]);
      // What the manual use restored was spent by the racing requests after the automatic one.
      const manualUse = after.uses.find((use) => use.trigger === "manual")!;
      expect(manualUse.restored).toBeGreaterThan(0);
      expect(manualUse.restored).toBeLessThanOrEqual(q.used - (DAILY - 60));
    } else expect(triggers).toEqual(["manual"]);
    expect(after.weekly_left).toBe(WEEKLY - triggers.length);
    expect(after.uses.reduce((sum, use) => sum + use.restored, 0)).toBe(q.restored);
    expect(q.restored).toBeLessThanOrEqual(q.used);
    expect(await resetHolds(u.id)).toBe(triggers.length);
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });
});

describe("the reconciliation", () => {
  it("allowance + restored − posted − pending = remaining after any sequence of requests, charges and uses", async () => {
    const u = await newUser(true);
    await gw.services.resets.grant(u.id, { count: 30 }, "cli");
    // A fixed pseudo-random sequence: the same every run.
    let seed = 2026;
    // The high bits: the low bits of this generator repeat with a short period.
    const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), Math.floor(seed / 2 ** 16) % n);
    for (let step = 0; step < 40; step++) {
      const op = next(5);
      const before = await settledQuota(u);
      if (op === 0 && before.remaining > 0) await spendTo(u, next(before.remaining));
      else if (op === 1) expect([200, 409, 429]).toContain((await call(other, "POST", "/api/v1/user/quota-resets/use", u.session)).status);
      else if (op === 2) {
        const flag = next(4) > 0;
        expect((await call(gw, "PUT", "/api/v1/user/quota-resets", u.session, { auto_reset_enabled: flag })).status).toBe(200);
      } else expect([200, 429]).toContain((await chat(u, { maxTokens: 1 + next(60), on: next(2) === 0 ? gw : other })).status);
      const q = await settledQuota(u);
      expect(q.allowance + q.restored - q.used - q.reserved, `step ${step}`).toBe(q.remaining);
      const { rows } = await db.pool.query<{ restorations: string; uses: string; restored: string }>(
        `select (select coalesce(sum(amount), 0) from quota_restorations r where r.account_id = a.id)::text as restorations,
                (select coalesce(sum(restored), 0) from quota_reset_uses x where x.user_id = a.user_id and x.day = a.period)::text as uses,
                a.restored::text
           from quota_accounts a where a.user_id = $1 and a.kind = 'daily_allowance'`,
        [u.id],
      );
      // No account before the day's first charge.
      const day = rows[0] ?? { restorations: "0", uses: "0", restored: "0" };
      expect(day.restorations, `step ${step}`).toBe(day.restored);
      expect(day.uses, `step ${step}`).toBe(day.restored);
    }
    expect((await resets(u)).uses.some((x) => x.trigger === "automatic")).toBe(true);
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });
});

// Last: it moves the shared clock forward.
describe("day and week boundaries", () => {
  it("a new day starts whole (no reset used); a new week renews the weekly resets the automatic reset uses", async () => {
    const u = await newUser(true);
    for (let i = 0; i < WEEKLY; i++) {
      await spendTo(u, 50);
      expect((await chat(u)).status).toBe(200);
    }
    expect((await resets(u)).weekly_left).toBe(0);
    await spendTo(u, 50);
    // Thursday -> Friday 00:00 UTC: the day is whole again, the request uses nothing.
    clock.set("2026-11-27T00:00:00Z");
    expect((await quota(u)).remaining).toBe(DAILY);
    expect((await chat(u)).status).toBe(200);
    expect((await resets(u)).uses).toHaveLength(WEEKLY);
    // Monday: the week's two again, and the flag is still on.
    clock.set("2026-11-30T00:00:01Z");
    await spendTo(u, 50);
    expect((await chat(u, { maxTokens: 60 })).status).toBe(200);
    const after = await resets(u);
    expect(after).toMatchObject({ auto_reset_enabled: true, weekly_left: WEEKLY - 1 });
    expect(after.uses[0]).toMatchObject({ kind: "weekly", trigger: "automatic", day: "2026-11-30" });
  });
});
