import { quickAddJob, runOnce } from "graphile-worker";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { reconcileLedger } from "../../src/quota/index.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { gatewayTasks, startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";
import { lossyCommitPool, type LossyCommitPool } from "../helpers/lossy-commit-pool.js";
import { spendDay } from "../helpers/spend.js";

// The calls that move money or quota are idempotent by the caller's Idempotency-Key (docs/billing.md, "Idempotency
// of money calls"): a reseller credit, a reset grant, a manual reset use. Real HTTP, real sessions, a real database;
// the one fault injected is a COMMIT whose reply never comes (lossy-commit-pool.ts).

const PASSWORD = "password-idempotent-1";
const DAILY = 1000;

let db: TestDatabase;
let lossy: LossyCommitPool;
let gw: TestGateway;
let admin: Record<string, string>;
let users = 0;

const config = {
  plans: { std: { daily_tokens: DAILY, weekly_resets: 1, context_limit: 100_000 } },
  default_plan: "std",
  // Generous for a loaded machine: twenty calls at once share ten connections.
  database: { request_timeout_ms: 20_000 },
};

beforeAll(async () => {
  db = await createTestDatabase();
  lossy = lossyCommitPool(db.pool);
  gw = await startTestGateway({ db, pool: lossy.pool, config });
  await gw.services.auth.users.create({ email: "admin@example.test", password: PASSWORD, role: "admin" });
  admin = (await logIn(gw.url, "admin@example.test", PASSWORD)).headers;
}, 60_000);
afterAll(async () => {
  await gw?.close();
  await db?.drop();
});
afterEach(async () => {
  lossy.loseCommits(0, "after");
  expect(await reconcileLedger(db.pool)).toEqual([]);
});

async function newUser() {
  const email = `payee-${++users}@example.test`;
  const user = await gw.services.auth.users.create({ email, password: PASSWORD, plan: "std" });
  const session = await logIn(gw.url, email, PASSWORD);
  return { id: user.id, email, headers: { authorization: `Bearer ${session.token}` } };
}

interface Answer {
  status: number;
  text: string;
  replayed: boolean;
  json: Record<string, unknown>;
}

async function post(route: string, headers: Record<string, string>, key: string | undefined, body?: unknown): Promise<Answer> {
  const res = await fetch(`${gw.url}${route}`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json", ...(key === undefined ? {} : { "idempotency-key": key }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, text, replayed: res.headers.get("idempotent-replayed") === "true", json: JSON.parse(text) };
}

const credit = (user: string, key: string | undefined, body: unknown = { usd: "2.50" }) =>
  post(`/api/v1/admin/reseller-balances/${encodeURIComponent(user)}/credits`, admin, key, body);
const grant = (user: string, key: string | undefined, body: unknown = { count: 2 }) =>
  post(`/api/v1/admin/users/${encodeURIComponent(user)}/quota-resets`, admin, key, body);
const useReset = (headers: Record<string, string>, key: string | undefined) => post("/api/v1/user/quota-resets/use", headers, key);

const count = async (table: string, userId: string) =>
  (await db.pool.query<{ n: number }>(`select count(*)::int as n from ${table} where user_id = $1::uuid`, [userId])).rows[0]!.n;
const credits = (userId: string) => count("reseller_credits", userId);
const grants = (userId: string) => count("quota_reset_grants", userId);
const uses = (userId: string) => count("quota_reset_uses", userId);
const remaining = async (userId: string) =>
  (await gw.services.ledger.balance({ kind: "daily_allowance", userId, base: BigInt(DAILY) })).remaining;

/** Request bodies without the error envelope's request_id, which names the request that carried them. */
const withoutRequestId = (a: Answer) => {
  const json = structuredClone(a.json) as { error?: { request_id?: string } };
  if (json.error) delete json.error.request_id;
  return json;
};

describe("the same key and body answer the first result", () => {
  it("a credit: the first balance, byte for byte, and one credit; 25 and 25.000 are the same amount", async () => {
    const u = await newUser();
    const first = await credit(u.email, "credit-1", { usd: "25", note: "invoice 7" });
    expect(first).toMatchObject({ status: 201, replayed: false, json: { user_id: u.id, credited_usd: "25" } });
    const again = await credit(u.id, "credit-1", { usd: "25.000", note: "invoice 7" });
    expect(again).toMatchObject({ status: 201, replayed: true });
    expect(again.text).toBe(first.text);
    expect(await credits(u.id)).toBe(1);
  });

  it("a grant, whoever sends it again: one grant", async () => {
    const u = await newUser();
    const first = await grant(u.email, "grant-1", { count: 3, expires: "2099-12-31", note: "outage" });
    expect(first).toMatchObject({ status: 201, replayed: false, json: { gifted_left: 3 } });
    const again = await grant(u.id, "grant-1", { count: 3, expires: "2100-01-01T00:00:00Z", note: "outage" });
    expect(again).toMatchObject({ status: 201, replayed: true });
    expect(again.text).toBe(first.text);
    // The command is the same operation: a rerun through the CLI's path answers the API's grant.
    const cli = await gw.services.resets.grant(u.id, { count: 3, expires: "2099-12-31", note: "outage" }, "cli", "grant-1");
    expect(cli).toMatchObject({ replayed: true, status: 201, answer: first.json });
    expect(await grants(u.id)).toBe(1);
  });

  it("a reset use: the first use and one reset spent", async () => {
    const u = await newUser();
    await spendDay(gw.services, u.id, DAILY, 300);
    const first = await useReset(u.headers, "use-1");
    expect(first).toMatchObject({ status: 200, replayed: false, json: { use: { restored: 300 } } });
    await spendDay(gw.services, u.id, DAILY, 100);
    const again = await useReset(u.headers, "use-1");
    expect(again).toMatchObject({ status: 200, replayed: true });
    expect(again.text).toBe(first.text);
    expect(await uses(u.id)).toBe(1);
    // The second spend is still spent: the replay restored nothing.
    expect(await remaining(u.id)).toBe(BigInt(DAILY - 100));
  });

  it("a refusal of the operation is the key's answer too (the draft, Stripe); a new key tries again", async () => {
    const u = await newUser();
    const refused = await useReset(u.headers, "use-early");
    expect(refused).toMatchObject({ status: 409, replayed: false, json: { error: { code: "nothing_to_restore" } } });
    await spendDay(gw.services, u.id, DAILY, 200);
    const replayed = await useReset(u.headers, "use-early");
    expect(replayed).toMatchObject({ status: 409, replayed: true });
    expect(withoutRequestId(replayed)).toEqual(withoutRequestId(refused));
    expect(await uses(u.id)).toBe(0);
    expect(await useReset(u.headers, "use-later")).toMatchObject({ status: 200, json: { use: { restored: 200 } } });

    // None left (one weekly reset, used): 429 with Retry-After, replayed without it (waiting changes no replay).
    await spendDay(gw.services, u.id, DAILY, 50);
    const none = await fetch(`${gw.url}/api/v1/user/quota-resets/use`, {
      method: "POST",
      headers: { ...u.headers, "idempotency-key": "use-none" },
    });
    expect(none.status).toBe(429);
    expect(none.headers.get("retry-after")).toMatch(/^\d+$/);
    const noneAgain = await fetch(`${gw.url}/api/v1/user/quota-resets/use`, {
      method: "POST",
      headers: { ...u.headers, "idempotency-key": "use-none" },
    });
    expect(noneAgain.status).toBe(429);
    expect(noneAgain.headers.get("idempotent-replayed")).toBe("true");
    expect(noneAgain.headers.get("retry-after")).toBeNull();
    expect(await uses(u.id)).toBe(1);
  });

  it("a request to correct (400) stores nothing: the key stays free", async () => {
    const u = await newUser();
    const past = await grant(u.id, "grant-corrected", { count: 1, expires: "2020-01-01" });
    expect(past).toMatchObject({ status: 400, json: { error: { param: "expires" } } });
    expect(await grant(u.id, "grant-corrected", { count: 1, expires: "2099-01-01" })).toMatchObject({ status: 201, replayed: false });
    expect(await grants(u.id)).toBe(1);
  });
});

describe("another body with the key", () => {
  it("is 422 idempotency_key_reused and writes nothing, for a credit and a grant", async () => {
    const u = await newUser();
    expect((await credit(u.id, "k", { usd: "1" })).status).toBe(201);
    for (const body of [{ usd: "2" }, { usd: "1", note: "other" }]) {
      expect(await credit(u.id, "k", body)).toMatchObject({
        status: 422,
        json: { error: { code: "idempotency_key_reused", param: "Idempotency-Key", type: "invalid_request_error" } },
      });
    }
    expect(await credits(u.id)).toBe(1);

    expect((await grant(u.id, "g", { count: 1 })).status).toBe(201);
    for (const body of [{ count: 2 }, { count: 1, expires: "2099-01-01" }, { count: 1, note: "n" }]) {
      expect(await grant(u.id, "g", body)).toMatchObject({ status: 422, json: { error: { code: "idempotency_key_reused" } } });
    }
    expect(await grants(u.id)).toBe(1);
    const balance = (await gw.services.resellers.balance(u.id)).credited_usd;
    expect(balance).toBe("1");
  });
});

describe("concurrent duplicates", () => {
  it("20 identical credits, grants and uses at once: one effect each and 20 identical answers", async () => {
    const u = await newUser();
    await spendDay(gw.services, u.id, DAILY, 400);
    const calls = {
      credit: () => credit(u.id, "burst", { usd: "3.25" }),
      grant: () => grant(u.id, "burst", { count: 1 }),
      use: () => useReset(u.headers, "burst"),
    };
    for (const [name, call] of Object.entries(calls)) {
      const answers = await Promise.all(Array.from({ length: 20 }, call));
      expect(new Set(answers.map((a) => `${a.status} ${a.text}`)).size, name).toBe(1);
      expect(answers[0]!.status, name).toBeLessThan(300);
      expect(
        answers.filter((a) => !a.replayed),
        name,
      ).toHaveLength(1);
    }
    expect([await credits(u.id), await grants(u.id), await uses(u.id)]).toEqual([1, 1, 1]);
    expect((await gw.services.resellers.balance(u.id)).credited_usd).toBe("3.25");
  }, 60_000);
});

describe("the key itself", () => {
  it("without one the calls work as before: each call is an operation", async () => {
    const u = await newUser();
    expect((await credit(u.id, undefined)).status).toBe(201);
    expect((await credit(u.id, undefined)).status).toBe(201);
    expect(await credits(u.id)).toBe(2);
    await spendDay(gw.services, u.id, DAILY, 10);
    expect((await useReset(u.headers, undefined)).status).toBe(200);
  });

  it("a malformed one is 400 naming the header, and nothing is written", async () => {
    const u = await newUser();
    await spendDay(gw.services, u.id, DAILY, 10);
    for (const bad of ["", "x".repeat(256), "tab\there", "caf\u00e9", '""']) {
      for (const answer of [await credit(u.id, bad), await grant(u.id, bad), await useReset(u.headers, bad)]) {
        expect(answer, JSON.stringify(bad)).toMatchObject({
          status: 400,
          json: { error: { code: "invalid_value", param: "Idempotency-Key", type: "invalid_request_error" } },
        });
      }
    }
    expect([await credits(u.id), await grants(u.id), await uses(u.id)]).toEqual([0, 0, 0]);
    // 255 characters, and the draft's quoted string, which stands for the same key.
    expect((await credit(u.id, "k".repeat(255))).status).toBe(201);
    expect((await credit(u.id, "quoted \\ key")).replayed).toBe(false);
    expect((await credit(u.id, '"quoted \\\\ key"')).replayed).toBe(true);
    expect(await credits(u.id)).toBe(2);
  });

  it("is scoped to the operation and to the user whose money moves: another user's key never collides", async () => {
    const [a, b] = [await newUser(), await newUser()];
    await spendDay(gw.services, a.id, DAILY, 10);
    await spendDay(gw.services, b.id, DAILY, 20);
    expect((await credit(a.id, "shared", { usd: "1" })).status).toBe(201);
    expect(await credit(b.id, "shared", { usd: "2" })).toMatchObject({ status: 201, replayed: false, json: { credited_usd: "2" } });
    expect(await grant(a.id, "shared", { count: 1 })).toMatchObject({ status: 201, replayed: false });
    expect(await useReset(a.headers, "shared")).toMatchObject({ status: 200, replayed: false, json: { use: { restored: 10 } } });
    expect(await useReset(b.headers, "shared")).toMatchObject({ status: 200, replayed: false, json: { use: { restored: 20 } } });
    expect([await credits(a.id), await credits(b.id), await grants(a.id), await uses(a.id), await uses(b.id)]).toEqual([1, 1, 1, 1, 1]);
  });
});

describe("a COMMIT whose outcome is unknown", () => {
  for (const when of ["after", "before"] as const) {
    it(`is retried under the call's key and applied once (the connection lost ${when} the commit), with or without a key`, async () => {
      const u = await newUser();
      await spendDay(gw.services, u.id, DAILY, 100);
      const lostBefore = lossy.lost();
      for (const key of ["lost-commit", undefined]) {
        lossy.loseCommits(1, when);
        expect(await credit(u.id, key, { usd: "4" })).toMatchObject({
          status: 201,
          replayed: false,
          json: { credited_usd: key ? "4" : "8" },
        });
        lossy.loseCommits(1, when);
        expect(await grant(u.id, key, { count: 1 })).toMatchObject({ status: 201, replayed: false });
      }
      lossy.loseCommits(1, when);
      expect(await useReset(u.headers, undefined)).toMatchObject({ status: 200, replayed: false, json: { use: { restored: 100 } } });
      expect(lossy.lost() - lostBefore).toBe(5);
      expect([await credits(u.id), await grants(u.id), await uses(u.id)]).toEqual([2, 2, 1]);
      expect(await remaining(u.id)).toBe(BigInt(DAILY));
    });
  }

  it("past the request's deadline is 503 database_unavailable naming the key, never 500; that key then answers once", async () => {
    const short = lossyCommitPool(db.pool);
    const quick = await startTestGateway({ db, pool: short.pool, config: { ...config, database: { request_timeout_ms: 500 } } });
    try {
      const u = await newUser();
      short.loseCommits(1_000_000, "after");
      const res = await fetch(`${quick.url}/api/v1/admin/reseller-balances/${u.id}/credits`, {
        method: "POST",
        headers: { ...admin, "content-type": "application/json" },
        body: JSON.stringify({ usd: "5" }),
      });
      expect(res.status).toBe(503);
      const key = res.headers.get("idempotency-key")!;
      expect(key).toMatch(/^[0-9a-f-]{36}$/);
      expect(((await res.json()) as { error: { code: string; message: string } }).error).toMatchObject({
        code: "database_unavailable",
        message: expect.stringContaining(key),
      });
      // At least the first attempt committed and lost its answer (on a loaded machine perhaps after the 503).
      await expect.poll(() => short.lost(), { timeout: 20_000 }).toBeGreaterThanOrEqual(1);
      short.loseCommits(0, "after");
      // Its first attempt did commit: the key answers that credit, and nothing is credited again.
      const retried = await credit(u.id, key, { usd: "5" });
      expect(retried).toMatchObject({ status: 201, replayed: true, json: { credited_usd: "5" } });
      expect(await credits(u.id)).toBe(1);
    } finally {
      await quick.close();
    }
  });
});

describe("retention", () => {
  it("the ledger_retention task deletes keys older than retention.idempotency_days (7) and keeps the rest", async () => {
    const u = await newUser();
    await credit(u.id, "old", { usd: "1" });
    await credit(u.id, "recent", { usd: "1" });
    await db.pool.query(
      `update idempotency_keys set created_at = now() - case key when 'old' then interval '8 days' else interval '6 days' end
       where owner_id = $1::uuid`,
      [u.id],
    );
    await quickAddJob({ pgPool: db.pool }, "ledger_retention", {});
    await runOnce({ pgPool: db.pool, taskList: gatewayTasks(gw) });
    const keys = async () =>
      (await db.pool.query<{ key: string }>("select key from idempotency_keys where owner_id = $1::uuid", [u.id])).rows.map((r) => r.key);
    await expect.poll(keys).toEqual(["recent"]);
    // A deleted key is free again: a new credit.
    expect(await credit(u.id, "old", { usd: "1" })).toMatchObject({ status: 201, replayed: false });
    expect(await credits(u.id)).toBe(3);
  });
});
