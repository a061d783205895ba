import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ManualClock } from "../../src/time/clock.js";
import { reconcileLedger } from "../../src/quota/index.js";
import type { Services } from "../../src/runtime/services.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";

// Reserve resets (docs/billing.md, "Reserve resets") through HTTP with real sessions against a real database:
// the settings, a manual use, the grants, the week's renewal and the day's, and two gateways sharing a database.

const PASSWORD = "password-123-reset";
const DAILY = 1000;
const WEEKLY = 2;

let db: TestDatabase;
let gw: TestGateway;
let other: TestGateway;
let clock: ManualClock;
let users = 0;

interface Resets {
  auto_reset_enabled: boolean;
  week: string;
  weekly_allowance: number;
  weekly_left: number;
  weekly_renews_at: string;
  gifted_left: number;
  gifts: { count: number; expires_at: string | null }[];
  grants: { count: number; expires_at: string | null; note: string; granted_by: string }[];
  uses: { id: string; kind: string; day: string; restored: number; trigger: string }[];
}

interface Quota {
  allowance: number;
  restored: number;
  used: number;
  reserved: number;
  remaining: number;
}

function call(on: { url: string }, method: string, route: string, headers: Record<string, string>, body?: unknown) {
  const init: RequestInit = { method, headers: { ...headers, "content-type": "application/json" } };
  if (body !== undefined) init.body = typeof body === "string" ? body : JSON.stringify(body);
  return fetch(`${on.url}${route}`, init);
}

async function newUser(role: "user" | "admin" = "user") {
  const email = `resets-${++users}@example.test`;
  const user = await gw.services.auth.users.create({ email, password: PASSWORD, role, plan: "std" });
  const { token, headers } = await logIn(gw.url, email, PASSWORD);
  return {
    id: user.id,
    email,
    headers: { authorization: `Bearer ${token}` },
    admin: headers,
  };
}

const resets = async (headers: Record<string, string>, on = gw) => {
  const res = await call(on, "GET", "/api/v1/user/quota-resets", headers);
  expect(res.status).toBe(200);
  return (await res.json()) as Resets;
};
const quota = async (headers: Record<string, string>) => (await (await call(gw, "GET", "/api/v1/user/quota", headers)).json()) as Quota;
const useReset = (headers: Record<string, string>, on = gw) => call(on, "POST", "/api/v1/user/quota-resets/use", headers);

/** Posts `amount` on today's allowance through a gateway's ledger, as a settled request would. */
async function charge(userId: string, amount: number, s: Services = gw.services) {
  const held = await s.ledger.reserve({ kind: "daily_allowance", userId, base: BigInt(DAILY), amount: 1n, requestId: `req-${amount}` });
  if (!held.ok) throw new Error("refused");
  await s.ledger.settle(held.hold.id, BigInt(amount));
  await s.ledger.flush();
}

async function holdInFlight(userId: string, amount: number) {
  const held = await gw.services.ledger.reserve({
    kind: "daily_allowance",
    userId,
    base: BigInt(DAILY),
    amount: BigInt(amount),
    requestId: "req-flight",
  });
  if (!held.ok) throw new Error("refused");
  await gw.services.ledger.flush();
  return held.hold;
}

beforeAll(async () => {
  db = await createTestDatabase();
  // A Sunday evening, UTC: the next week starts in a little over two hours.
  clock = new ManualClock("2026-11-29T22:00:00Z");
  const config = { plans: { std: { daily_tokens: DAILY, weekly_resets: WEEKLY, context_limit: 128_000 } }, default_plan: "std" };
  gw = await startTestGateway({ db, clock, config });
  other = await startTestGateway({ db, clock, config });
});

afterAll(async () => {
  await other?.close();
  await gw?.close();
  await db?.drop();
});

describe("reserve resets of the session user", () => {
  it("reads the week's allowance, the flag and the renewal", async () => {
    const u = await newUser();
    expect(await resets(u.headers)).toMatchObject({
      auto_reset_enabled: false,
      week: "2026-W48",
      weekly_allowance: WEEKLY,
      weekly_left: WEEKLY,
      weekly_renews_at: "2026-11-30T00:00:00.000Z",
      gifted_left: 0,
      gifts: [],
      grants: [],
      uses: [],
    });
  });

  it("refuses an API key on every route (401)", async () => {
    const u = await newUser();
    const { key } = await gw.services.auth.apiKeys.create({ user: u.email });
    const headers = { authorization: `Bearer ${key}` };
    for (const [method, route, body] of [
      ["GET", "/api/v1/user/quota-resets", undefined],
      ["PUT", "/api/v1/user/quota-resets", { auto_reset_enabled: true }],
      ["POST", "/api/v1/user/quota-resets/use", undefined],
    ] as const) {
      expect((await call(gw, method, route, headers, body)).status, `${method} ${route}`).toBe(401);
    }
  });

  it("saves the flag strictly, spending nothing; any other body is a 400 naming the field", async () => {
    const u = await newUser();
    const put = (body: unknown) => call(gw, "PUT", "/api/v1/user/quota-resets", u.headers, body);
    const saved = await put({ auto_reset_enabled: true });
    expect(saved.status).toBe(200);
    expect(await saved.json()).toEqual({ auto_reset_enabled: true });
    expect(await resets(u.headers)).toMatchObject({ auto_reset_enabled: true, weekly_left: WEEKLY, uses: [] });
    for (const [body, param] of [
      [{}, "auto_reset_enabled"],
      [{ auto_reset_enabled: "yes" }, "auto_reset_enabled"],
      [{ auto_reset_enabled: null }, "auto_reset_enabled"],
      [{ auto_reset_enabled: false, extra: 1 }, "extra"],
    ] as const) {
      const res = await put(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(((await res.json()) as { error: { param: string } }).error.param).toBe(param);
    }
    expect((await put("[true]")).status).toBe(400);
    expect((await resets(u.headers)).auto_reset_enabled).toBe(true);
  });

  it("refuses a use with nothing spent today (409), using no reset", async () => {
    const u = await newUser();
    const res = await useReset(u.headers);
    expect(res.status).toBe(409);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("nothing_to_restore");
    expect(await resets(u.headers)).toMatchObject({ weekly_left: WEEKLY, uses: [] });
  });

  it("restores the day to the plan's allowance, holds in flight still held, an overshoot included", async () => {
    const u = await newUser();
    await charge(u.id, 700);
    const flight = await holdInFlight(u.id, 100);
    const first = await useReset(u.headers);
    expect(first.status).toBe(200);
    const used = (await first.json()) as { use: { kind: string; restored: number; trigger: string }; quota_resets: Resets };
    expect(used.use).toMatchObject({ kind: "weekly", restored: 700, trigger: "manual", day: "2026-11-29" });
    expect(used.quota_resets.weekly_left).toBe(WEEKLY - 1);
    expect(await quota(u.headers)).toMatchObject({ allowance: DAILY, restored: 700, used: 700, reserved: 100, remaining: 900 });

    // The request in flight overshoots: the day goes below zero, and the next reset restores that too.
    await gw.services.ledger.settle(flight.id, 2500n);
    await gw.services.ledger.flush();
    expect(await quota(u.headers)).toMatchObject({ remaining: -1500 });
    expect(((await (await useReset(u.headers)).json()) as { use: { restored: number } }).use.restored).toBe(2500);
    expect(await quota(u.headers)).toMatchObject({ restored: 3200, used: 3200, reserved: 0, remaining: DAILY });

    // The week's two are gone and no gift is left: the usual quota error.
    await charge(u.id, 10);
    const none = await useReset(u.headers);
    expect(none.status).toBe(429);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe("insufficient_quota");
    expect(Number(none.headers.get("retry-after"))).toBeGreaterThan(0);
    const after = await resets(u.headers);
    expect(after).toMatchObject({ weekly_left: 0, gifted_left: 0 });
    expect(after.uses.map((x) => [x.kind, x.restored])).toEqual([
      ["weekly", 2500],
      ["weekly", 700],
    ]);
  });
});

describe("grants", () => {
  it("are an admin's (session and CSRF), used after the week's, the gift expiring first first", async () => {
    const u = await newUser();
    const admin = await newUser("admin");
    const grant = (headers: Record<string, string>, body: unknown) =>
      call(gw, "POST", `/api/v1/admin/users/${u.email}/quota-resets`, headers, body);
    expect((await grant(u.admin, { count: 1 })).status).toBe(403);
    expect((await grant(admin.headers, { count: 1 })).status).toBe(403);
    expect((await grant(admin.admin, { count: 0 })).status).toBe(400);
    expect((await grant(admin.admin, { count: 1, expires: "2020-01-01" })).status).toBe(400);
    expect((await grant(admin.admin, { count: 1, until: "2027-01-01" })).status).toBe(400);
    expect((await grant(admin.admin, { count: 2, note: "sorry for the outage" })).status).toBe(201);
    const granted = await grant(admin.admin, { count: 1, expires: "2026-12-01", note: "trial" });
    expect(granted.status).toBe(201);
    expect(await granted.json()).toMatchObject({
      gifted_left: 3,
      gifts: [
        { count: 1, expires_at: "2026-12-02T00:00:00.000Z" },
        { count: 2, expires_at: null },
      ],
    });

    const kinds: string[] = [];
    for (let i = 0; i < 4; i++) {
      await charge(u.id, 50);
      const res = await useReset(u.headers);
      expect(res.status).toBe(200);
      kinds.push(((await res.json()) as { use: { kind: string } }).use.kind);
    }
    expect(kinds).toEqual(["weekly", "weekly", "gifted", "gifted"]);
    const mine = await resets(u.headers);
    // The gift that expires first went first: one perpetual is left.
    expect(mine).toMatchObject({ gifted_left: 1, gifts: [{ count: 1, expires_at: null }] });
    expect(mine.grants.map((g) => [g.count, g.note, g.granted_by])).toEqual([
      [1, "trial", `admin:${admin.id}`],
      [2, "sorry for the outage", `admin:${admin.id}`],
    ]);
    const seen = (await (await call(gw, "GET", `/api/v1/admin/users/${u.id}/quota-resets`, admin.headers)).json()) as Resets;
    expect(seen.uses).toHaveLength(4);
    expect((await call(gw, "GET", `/api/v1/admin/users/${u.id}/quota-resets`, u.headers)).status).toBe(403);
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });
});

describe("the clock", () => {
  it("renews the week's resets at Monday 00:00 UTC without accumulating; the flag survives days and weeks; gifts expire", async () => {
    clock.set("2026-11-29T22:00:00Z");
    const u = await newUser();
    const admin = await newUser("admin");
    await call(gw, "PUT", "/api/v1/user/quota-resets", u.headers, { auto_reset_enabled: true });
    await gw.services.resets.grant(u.id, { count: 1, expires: "2026-11-30T12:00:00Z" }, "cli");
    await charge(u.id, 300);
    expect((await useReset(u.headers)).status).toBe(200);
    expect(await resets(u.headers)).toMatchObject({ weekly_left: 1, gifted_left: 1 });

    // Monday: a new week (two again, not three), a new day (nothing spent), the flag kept.
    clock.set("2026-11-30T00:00:00Z");
    expect(await resets(u.headers)).toMatchObject({
      week: "2026-W49",
      weekly_left: WEEKLY,
      weekly_renews_at: "2026-12-07T00:00:00.000Z",
      auto_reset_enabled: true,
      gifted_left: 1,
    });
    expect(await quota(u.headers)).toMatchObject({ used: 0, restored: 0, remaining: DAILY });
    expect((await useReset(u.headers)).status).toBe(409);

    // Past its expiry the gift is gone; the flag still set the next day.
    clock.set("2026-12-01T08:00:00Z");
    expect(await resets(u.headers)).toMatchObject({ weekly_left: WEEKLY, gifted_left: 0, gifts: [], auto_reset_enabled: true });
    await charge(u.id, 10);
    await charge(u.id, 10);
    expect((await useReset(u.headers)).status).toBe(200);
    await charge(u.id, 10);
    expect((await useReset(u.headers)).status).toBe(200);
    await charge(u.id, 10);
    expect((await useReset(u.headers)).status).toBe(429);
    expect((await call(gw, "GET", `/api/v1/admin/users/${u.id}/quota-resets`, admin.headers)).status).toBe(200);
    clock.set("2026-11-29T22:00:00Z");
  });
});

describe("two gateways sharing one database", () => {
  it("a use racing others, on both, consumes exactly one reset", async () => {
    const u = await newUser();
    await charge(u.id, 400);
    await charge(u.id, 200, other.services);
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => useReset(u.headers, i % 2 === 0 ? gw : other)));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([200, ...Array<number>(11).fill(409)]);
    const after = await resets(u.headers, other);
    expect(after.weekly_left).toBe(WEEKLY - 1);
    expect(after.uses).toHaveLength(1);
    expect(after.uses[0]!.restored).toBe(600);
    const { rows } = await db.pool.query(
      `select count(*)::int as n from quota_holds h join quota_accounts a on a.id = h.account_id where a.user_id = $1 and a.kind like '%_resets'`,
      [u.id],
    );
    expect(rows[0].n).toBe(1);
  });

  it("a use retried with the same id is one reset, whichever process sees it", async () => {
    const u = await newUser();
    await charge(u.id, 250);
    const id = "7c1f4b8e-2f6c-4d3a-9b1e-0a5d6c7e8f90";
    const use = (s: Services) =>
      s.ledger.useReset({ userId: u.id, id, dailyBase: BigInt(DAILY), weeklyBase: BigInt(WEEKLY), trigger: "manual" });
    const outcomes = await Promise.all([use(gw.services), use(other.services), use(gw.services), use(other.services)]);
    expect(outcomes.filter((o) => o.outcome === "used" && !o.duplicate)).toHaveLength(1);
    for (const o of outcomes) expect(o).toMatchObject({ outcome: "used", restored: 250n, kind: "weekly" });
    expect((await resets(u.headers)).weekly_left).toBe(WEEKLY - 1);
  });
});

describe("the reconciliation", () => {
  it("allowance + restored − posted − pending = remaining after any sequence of uses and charges", async () => {
    const u = await newUser();
    await gw.services.resets.grant(u.id, { count: 20 }, "cli");
    // A fixed pseudo-random sequence: the same every run.
    let seed = 21;
    const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const flights: { id: string }[] = [];
    for (let step = 0; step < 40; step++) {
      const op = next(4);
      const before = await quota(u.headers);
      // A request is admitted only while something remains: below that, the user uses a reset instead.
      if (op === 0 && before.remaining > 0) await charge(u.id, 1 + next(600));
      else if (op === 1 && before.remaining > 50) flights.push(await holdInFlight(u.id, 1 + next(50)));
      else if (op === 2 && flights.length > 0) {
        await gw.services.ledger.settle(flights.pop()!.id, BigInt(next(300)));
        await gw.services.ledger.flush();
      } else expect([200, 409]).toContain((await useReset(u.headers)).status);
      const q = await quota(u.headers);
      expect(q.allowance + q.restored - q.used - q.reserved, `step ${step}`).toBe(q.remaining);
      const { rows } = await db.pool.query(
        `select coalesce((select sum(amount) from quota_restorations r where r.account_id = a.id), 0)::int as restored,
                coalesce((select sum(restored) from quota_reset_uses where user_id = a.user_id and day = a.period), 0)::int as by_uses
         from quota_accounts a where a.user_id = $1 and a.kind = 'daily_allowance'`,
        [u.id],
      );
      // No day account before the first charge: a refused use (409) leaves nothing behind, not even the account.
      expect(rows[0] ?? { restored: 0, by_uses: 0 }).toEqual({ restored: q.restored, by_uses: q.restored });
    }
    for (const f of flights) await gw.services.ledger.release(f.id);
    await gw.services.ledger.flush();
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });
});
