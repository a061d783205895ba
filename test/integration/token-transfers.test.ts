import { runOnce } from "graphile-worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setTimeout as sleep } from "node:timers/promises";
import { createPool } from "../../src/db/pool.js";
import { ManualClock } from "../../src/time/clock.js";
import { reconcileLedger } from "../../src/quota/index.js";
import { completeRows } from "../../src/transfers/transfers-sql.js";
import { transferRecord, transfersAnswer } from "../../src/transfers/wire.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { gatewayTasks, startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";
import { spendDay } from "../helpers/spend.js";
import { startPgFaultProxy } from "../helpers/pg-fault-proxy.js";
import { lockWaits, pendingTransfer, pendingTransfers, restorationsOf, whileDayLocked } from "../helpers/transfers.js";

// Daily token transfers (docs/billing.md, "Token transfers") through HTTP with real sessions, two gateways on one
// database and an injected clock for the day's end. No graphile-worker runs: the sending gateway completes what it
// sent; the complete_transfer task (run here with runOnce) is the backstop, beside it or after it.

const PASSWORD = "password-123-transfer";
const DAILY = 1000;
const TODAY = "2026-11-26";
const config = {
  plans: { std: { daily_tokens: DAILY, weekly_resets: 2, context_limit: 128_000 } },
  default_plan: "std",
  transfers: { send_daily_limit: 600, receive_daily_limit: 700, service_daily_limit: 1_000_000, lookups_per_minute: 5 },
};

let db: TestDatabase;
let gw: TestGateway;
let other: TestGateway;
let clock: ManualClock;
let users = 0;

interface User {
  id: string;
  email: string;
  /** Bearer and CSRF headers of a session. */
  headers: Record<string, string>;
}

interface Record_ {
  id: string;
  direction: string;
  counterparty: string;
  amount: number;
  status: string;
  reason: string | null;
  applied: number | null;
  returned: number | null;
  day: string;
}

async function newUser(role: "user" | "admin" = "user"): Promise<User> {
  const email = `transfer-${++users}@example.test`;
  const user = await gw.services.auth.users.create({ email, password: PASSWORD, role, plan: "std" });
  const { headers } = await logIn(gw.url, email, PASSWORD);
  return { id: user.id, email, headers };
}

function call(method: string, route: string, headers: Record<string, string>, body?: unknown, on: TestGateway = gw) {
  const init: RequestInit = { method, headers: { ...headers, "content-type": "application/json" } };
  if (body !== undefined) init.body = typeof body === "string" ? body : JSON.stringify(body);
  return fetch(`${on.url}${route}`, init);
}

let keys = 0;
const send = (from: User, to: string, amount: unknown, key = `key-${++keys}`, on: TestGateway = gw) =>
  call("POST", "/api/v1/user/token-transfers", from.headers, { recipient: to, amount, idempotency_key: key }, on);

async function sent(from: User, to: string, amount: number, key?: string, on: TestGateway = gw) {
  const res = await send(from, to, amount, key, on);
  expect(res.status, await res.clone().text()).toBe(202);
  return transferRecord.parse(await res.json()) as Record_;
}

/** Lets graphile-worker run the queued complete_transfer tasks (the backstop). */
async function complete() {
  await runOnce({ pgPool: db.pool, taskList: gatewayTasks(gw) });
}

/** The transfer once it has ended, as its sender's history shows it. */
async function ended(sender: User, id: string) {
  let found: Record_ | undefined;
  await expect
    .poll(async () => (found = (await listOf(sender)).transfers.find((t) => t.id === id))?.status, { timeout: 30_000 })
    .toMatch(/^(completed|refused)$/);
  return found!;
}

/** Until every transfer of the user (or of everyone), sent or received, has ended. */
const allEnded = (u?: User) => expect.poll(() => pendingTransfers(db.pool, u?.id), { timeout: 30_000 }).toBe(0);

const quota = async (u: User) =>
  (await (await call("GET", "/api/v1/user/quota", u.headers)).json()) as {
    restored: number;
    used: number;
    reserved: number;
    remaining: number;
  };
const listOf = async (u: User, query = "") => {
  const res = await call("GET", `/api/v1/user/token-transfers${query}`, u.headers);
  expect(res.status).toBe(200);
  return transfersAnswer.parse(await res.json());
};

/** Spends `amount` of today's allowance, as a settled request would. */
const spend = (u: User, amount: number) => spendDay(gw.services, u.id, DAILY, amount);

const errorOf = async (res: Response) =>
  ((await res.json()) as { error: { code: string; param: string | null; message: string; request_id: string | null } }).error;

async function setPolicy(admin: User, change: Record<string, unknown>) {
  const now = (await (await call("GET", "/api/v1/admin/token-transfers/policy", admin.headers)).json()) as Record<string, unknown>;
  const body = { ...now, ...change };
  delete body.updated_by;
  delete body.updated_at;
  const res = await call("PUT", "/api/v1/admin/token-transfers/policy", admin.headers, body);
  expect(res.status, await res.clone().text()).toBe(200);
}

let admin: User;

beforeAll(async () => {
  db = await createTestDatabase();
  clock = new ManualClock(`${TODAY}T12:00:00Z`);
  gw = await startTestGateway({ db, clock, config });
  other = await startTestGateway({ db, clock, config });
  admin = await newUser("admin");
});

afterAll(async () => {
  await other?.close();
  await gw?.close();
  await db?.drop();
});

describe("a transfer", () => {
  it("is pending (202), then completed by the sending gateway with no worker: the recipient's spent units refilled, the sender charged", async () => {
    const [a, b] = [await newUser(), await newUser()];
    await spend(b, 500);
    const t = await whileDayLocked(db.pool, b.id, async () => {
      const t = await sent(a, b.email, 200, "first");
      expect(t).toMatchObject({ direction: "sent", amount: 200, status: "pending", applied: null, day: TODAY });
      expect(t.counterparty).toBe("tr***@example.test");
      // Held on the sender's day while pending (its completion waits for b's day here).
      expect(await quota(a)).toMatchObject({ used: 0, reserved: 200, remaining: 800 });
      return t;
    });

    // Nobody runs graphile-worker: the gateway that answered the send completes it, and the history shows it.
    expect(await ended(a, t.id)).toMatchObject({ status: "completed", applied: 200, returned: 0 });
    const again = await send(a, b.email, 200, "first");
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ id: t.id, status: "completed", applied: 200, returned: 0 });
    expect(await quota(a)).toMatchObject({ used: 200, reserved: 0, remaining: 800 });
    expect(await quota(b)).toMatchObject({ restored: 200, used: 500, remaining: 700 });
    // The recipient sees it received, by the sender's masked email.
    expect((await listOf(b)).transfers[0]).toMatchObject({ id: t.id, direction: "received", status: "completed" });
    // The backstop task, queued with the send, runs after it: it finds the transfer ended and changes nothing.
    await complete();
    expect(await restorationsOf(db.pool, t.id)).toBe(1);
    expect(await quota(b)).toMatchObject({ restored: 200, used: 500, remaining: 700 });
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("places only what the recipient spent, giving the rest back to the sender; nothing spent: refused, nothing moved", async () => {
    const [a, b, c] = [await newUser(), await newUser(), await newUser()];
    await spend(b, 100);
    const partial = await sent(a, b.email, 300);
    const none = await sent(a, c.id, 50);
    await allEnded(a);
    const { transfers } = await listOf(a);
    expect(transfers.find((x) => x.id === partial.id)).toMatchObject({ status: "completed", applied: 100, returned: 200 });
    expect(transfers.find((x) => x.id === none.id)).toMatchObject({
      status: "refused",
      reason: "nothing_to_refill",
      applied: 0,
      returned: 50,
    });
    expect(await quota(a)).toMatchObject({ used: 100, reserved: 0 });
    expect(await quota(b)).toMatchObject({ remaining: DAILY });
    expect(await quota(c)).toMatchObject({ remaining: DAILY, restored: 0 });
    // What was given back counts against no limit: 600 a day, 100 of it used.
    expect((await listOf(a)).limits.sending_left).toBe(500);
  });

  it("refuses bad input with 400 naming the field; an unknown recipient reads like one who accepts none", async () => {
    const [a, b] = [await newUser(), await newUser()];
    await call("PATCH", "/api/v1/user/token-transfers/preferences", b.headers, { receive_disabled: true });
    const cases: [unknown, string][] = [
      [{ recipient: b.email, amount: 0, idempotency_key: "k" }, "amount"],
      [{ recipient: b.email, amount: -5, idempotency_key: "k" }, "amount"],
      [{ recipient: b.email, amount: 1.5, idempotency_key: "k" }, "amount"],
      [{ recipient: b.email, amount: "5", idempotency_key: "k" }, "amount"],
      [{ recipient: b.email, idempotency_key: "k" }, "amount"],
      [{ recipient: b.email, amount: 5, idempotency_key: "" }, "idempotency_key"],
      [{ recipient: b.email, amount: 5, idempotency_key: "k".repeat(256) }, "idempotency_key"],
      [{ recipient: b.email, amount: 5, idempotency_key: "a\nb" }, "idempotency_key"],
      [{ recipient: b.email, amount: 5, idempotency_key: "k", sender: a.id }, "sender"],
      [{ recipient: a.email, amount: 5, idempotency_key: "k" }, "recipient"],
    ];
    for (const [body, param] of cases) {
      const res = await call("POST", "/api/v1/user/token-transfers", a.headers, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect((await errorOf(res)).param, JSON.stringify(body)).toBe(param);
    }
    const unknown = await errorOf(await send(a, "nobody@example.test", 5));
    const refusing = await errorOf(await send(a, b.email, 5));
    expect({ ...refusing, request_id: null }).toEqual({ ...unknown, request_id: null });
    expect(unknown.param).toBe("recipient");
    expect((await call("POST", "/api/v1/user/token-transfers", a.headers, "{not json")).status).toBe(400);
  });

  it("the same key: 50 at once are one transfer and 50 identical answers; another payload is 422", async () => {
    const [a, b] = [await newUser(), await newUser()];
    await spend(b, 300);
    // Still pending throughout (its completion waits for b's day), so every answer is the same.
    await whileDayLocked(db.pool, b.id, async () => {
      const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => send(a, b.email, 40, "same", i % 2 ? gw : other)));
      expect(new Set(answers.map((r) => r.status))).toEqual(new Set([202]));
      const bodies = await Promise.all(answers.map((r) => r.text()));
      expect(new Set(bodies).size).toBe(1);
      expect(await quota(a)).toMatchObject({ reserved: 40 });
    });
    const { rows } = await db.pool.query("select count(*)::int as n from token_transfers where sender_id = $1", [a.id]);
    expect(rows[0].n).toBe(1);
    await allEnded(a);
    expect(await quota(a)).toMatchObject({ used: 40, reserved: 0 });
    const other_ = await send(a, b.email, 41, "same");
    expect(other_.status).toBe(422);
    expect(await errorOf(other_)).toMatchObject({ code: "idempotency_key_reused", param: "idempotency_key" });
  });

  it("cannot forward what was received today, nor send more than remains after holds in flight", async () => {
    const [a, b, c] = [await newUser(), await newUser(), await newUser()];
    await spend(b, 600);
    await ended(a, (await sent(a, b.email, 300)).id);
    // b: 1000 - 600 + 300 = 700 remaining, 300 of it received today: 400 transferable.
    expect((await listOf(b)).limits.transferable).toBe(400);
    await spend(c, 500);
    const tooMuch = await send(b, c.email, 401);
    expect(tooMuch.status).toBe(409);
    expect(await errorOf(tooMuch)).toMatchObject({ code: "insufficient_transferable", param: "amount" });
    expect((await send(b, c.email, 400)).status).toBe(202);
  });
});

describe("completion", () => {
  it("by the sending gateway and by the complete_transfer task at the same time: completed once", async () => {
    const [a, b] = [await newUser(), await newUser()];
    await spend(b, 400);
    const { t, task } = await whileDayLocked(db.pool, b.id, async () => {
      const t = await sent(a, b.email, 130);
      const task = complete();
      // Both wait: one for b's day, the other for the transfer's record, which the first holds.
      await expect.poll(() => lockWaits(db.pool), { timeout: 30_000 }).toBeGreaterThanOrEqual(2);
      return { t, task };
    });
    await task;
    expect(await ended(a, t.id)).toMatchObject({ status: "completed", applied: 130, returned: 0 });
    expect(await restorationsOf(db.pool, t.id)).toBe(1);
    expect(await quota(a)).toMatchObject({ used: 130, reserved: 0 });
    expect(await quota(b)).toMatchObject({ restored: 130 });
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("run many times at once, on two processes, beside the sending gateway's own, completes a transfer once", async () => {
    const [a, b] = [await newUser(), await newUser()];
    await spend(b, 400);
    const t = await sent(a, b.email, 150);
    const runs = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? other : gw).services.transfers.complete(t.id)));
    expect(runs.every((r) => r?.status === "completed" && r.applied === 150n)).toBe(true);
    await complete();
    const { rows } = await db.pool.query("select count(*)::int as n from quota_restorations where reference = $1", [t.id]);
    expect(rows[0].n).toBe(1);
    expect(await quota(b)).toMatchObject({ restored: 150 });
    expect(await quota(a)).toMatchObject({ used: 150, reserved: 0 });
    expect(await gw.services.transfers.complete("00000000-0000-4000-8000-000000000000")).toBeUndefined();
  });

  it("cut off midway (its connection dropped while it waits on the recipient's day), leaves nothing, and completes once later", async () => {
    const [a, b] = [await newUser(), await newUser()];
    await spend(b, 400);
    // As sent by a gateway that stopped before completing it: only this test completes it.
    const t = await pendingTransfer(db.pool, { senderId: a.id, recipientId: b.id, amount: 120n, day: TODAY, senderBase: BigInt(DAILY) });
    const proxy = await startPgFaultProxy(db.url);
    const cutPool = createPool(proxy.url, 1, () => {});
    const blocker = await db.pool.connect();
    try {
      await blocker.query("begin");
      await blocker.query("select 1 from quota_accounts where user_id = $1 and kind = 'daily_allowance' for update", [b.id]);
      const midway = completeRows(cutPool, t.id, { today: TODAY, baseOf: () => BigInt(DAILY) }).then(
        () => "completed",
        () => "failed",
      );
      // It has locked the transfer and the sender's hold, and waits for the recipient's day.
      for (let waiting = 0; waiting === 0; await sleep(20)) {
        const { rows } = await db.pool.query<{ n: number }>(
          "select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and query like '%quota_accounts%'",
        );
        waiting = rows[0]!.n;
      }
      proxy.cut();
      await blocker.query("rollback");
      expect(await midway).toBe("failed");
    } finally {
      blocker.release();
      await cutPool.end().catch(() => {});
      await proxy.close();
    }
    const { rows } = await db.pool.query("select status from token_transfers where id = $1", [t.id]);
    expect(rows[0].status).toBe("pending");
    await complete();
    expect((await listOf(a)).transfers[0]).toMatchObject({ id: t.id, status: "completed", applied: 120 });
    expect(await quota(b)).toMatchObject({ restored: 120 });
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("by the sending gateway, cut off midway, is retried until it completes, once", async () => {
    const [a, b] = [await newUser(), await newUser()];
    await spend(b, 400);
    const proxy = await startPgFaultProxy(db.url);
    const cutPool = createPool(proxy.url, 4, () => {});
    const cutGw = await startTestGateway({ db, pool: cutPool, clock, config });
    try {
      const t = await whileDayLocked(db.pool, b.id, async () => {
        const t = await sent(a, b.email, 120, undefined, cutGw);
        // Its completion has locked the transfer and the sender's hold, and waits for b's day: cut it there.
        await expect.poll(() => lockWaits(db.pool, "%quota_accounts%"), { timeout: 30_000 }).toBe(1);
        proxy.cut();
        return t;
      });
      expect(await ended(a, t.id)).toMatchObject({ status: "completed", applied: 120, returned: 0 });
      expect(proxy.stats().cut).toBeGreaterThan(0);
      expect(await restorationsOf(db.pool, t.id)).toBe(1);
      expect(await quota(a)).toMatchObject({ used: 120, reserved: 0 });
      expect(await quota(b)).toMatchObject({ restored: 120 });
      expect(await reconcileLedger(db.pool)).toEqual([]);
    } finally {
      await cutGw.close();
      await cutPool.end().catch(() => {});
      await proxy.close();
    }
  });
});

describe("limits", () => {
  it("are never exceeded by sends racing over two gateways, pending ones counted", async () => {
    const sender = await newUser();
    const recipients = [await newUser(), await newUser(), await newUser()];
    for (const r of recipients) await spend(r, 900);
    // Send limit 600: 20 sends of 100 at once, 6 go through.
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => send(sender, recipients[i % 3]!.email, 100, `race-${i}`, i % 2 ? gw : other)),
    );
    expect(answers.filter((r) => r.status === 202)).toHaveLength(6);
    const refused = answers.filter((r) => r.status !== 202);
    expect(new Set(refused.map((r) => r.status))).toEqual(new Set([409]));
    expect((await listOf(sender)).limits).toMatchObject({ sending_left: 0 });

    // Receive limit 700: eight senders give one recipient 100 each at once; 7 go through.
    const target = await newUser();
    await spend(target, 900);
    const senders = await Promise.all(Array.from({ length: 8 }, () => newUser()));
    const received = await Promise.all(senders.map((s, i) => send(s, target.email, 100, "to-target", i % 2 ? gw : other)));
    expect(received.filter((r) => r.status === 202)).toHaveLength(7);
    await allEnded(target);
    expect((await listOf(target)).limits.receiving_left).toBe(0);
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("do not renew when a reserve reset restores the allowance", async () => {
    const [a, b] = [await newUser(), await newUser()];
    await spend(b, 900);
    await ended(a, (await sent(a, b.email, 500)).id);
    await spend(a, 300);
    expect((await call("POST", "/api/v1/user/quota-resets/use", a.headers)).status).toBe(200);
    const { limits } = await listOf(a);
    expect(limits).toMatchObject({ sending_left: 100, transferable: DAILY });
    expect((await send(a, b.email, 101)).status).toBe(409);
  });

  it("service-wide, and the policy's switch and minimum, saved with an optimistic revision", async () => {
    const [a, b] = [await newUser(), await newUser()];
    await spend(b, 800);
    const before = (await (await call("GET", "/api/v1/admin/token-transfers/policy", admin.headers)).json()) as { revision: number };
    const stale = { revision: before.revision, enabled: true, min_amount: 10, send_daily_limit: 600, receive_daily_limit: 700 };
    // Every earlier transfer ended (one refused would count no more): what the service has left stays put.
    await allEnded();
    const { limits } = await listOf(a);
    // Only 150 more today over every user.
    const service = 1_000_000 - limits.service_left + 150;
    const first = await call("PUT", "/api/v1/admin/token-transfers/policy", admin.headers, { ...stale, service_daily_limit: service });
    expect(first.status).toBe(200);
    expect(((await first.json()) as { revision: number }).revision).toBe(before.revision + 1);
    // The same revision again is stale: 409, nothing changed.
    const again = await call("PUT", "/api/v1/admin/token-transfers/policy", admin.headers, { ...stale, service_daily_limit: 1 });
    expect(again.status).toBe(409);
    expect(
      ((await (await call("GET", "/api/v1/admin/token-transfers/policy", admin.headers)).json()) as { service_daily_limit: number })
        .service_daily_limit,
    ).toBe(service);

    expect((await errorOf(await send(a, b.email, 5))).param).toBe("amount");
    expect((await send(a, b.email, 151)).status).toBe(409);
    expect((await send(a, b.email, 150)).status).toBe(202);
    expect((await listOf(a)).limits.service_left).toBe(0);
    await setPolicy(admin, { enabled: false, service_daily_limit: 1_000_000, min_amount: 1 });
    const off = await send(a, b.email, 1);
    expect(off.status).toBe(403);
    expect((await errorOf(off)).code).toBe("transfers_disabled");
    await setPolicy(admin, { enabled: true });
  });
});

describe("who sees what", () => {
  it("another user's transfers are invisible; admin routes refuse a user session (403) and a PUT without CSRF (403)", async () => {
    const [a, b, stranger] = [await newUser(), await newUser(), await newUser()];
    await spend(b, 100);
    const t = await sent(a, b.email, 10);
    expect((await listOf(stranger)).transfers.map((x) => x.id)).not.toContain(t.id);
    expect((await call("GET", "/api/v1/admin/token-transfers", stranger.headers)).status).toBe(403);
    expect((await call("GET", "/api/v1/admin/token-transfers/policy", stranger.headers)).status).toBe(403);
    const noCsrf = { authorization: admin.headers.authorization! };
    expect((await call("PUT", "/api/v1/admin/token-transfers/policy", noCsrf, { revision: 0 })).status).toBe(403);
    const latest = (await (await call("GET", `/api/v1/admin/token-transfers?user_id=${a.id}`, admin.headers)).json()) as {
      transfers: { id: string; sender_email: string }[];
    };
    expect(latest.transfers.map((x) => x.id)).toContain(t.id);
    expect(latest.transfers.every((x) => x.sender_email === a.email || x.id !== t.id)).toBe(true);
    expect((await call("GET", "/api/v1/admin/token-transfers?user_id=nope", admin.headers)).status).toBe(400);
  });

  it("sends cannot probe for users either: past the lookup budget every new send is 429, a replay is still answered", async () => {
    const [a, b] = [await newUser(), await newUser()];
    await spend(b, 500);
    const first = await sent(a, b.email, 10, "before-probing");
    for (let i = 0; i < 5; i++) expect((await send(a, `ghost-${i}@example.test`, 1)).status).toBe(400);
    // The budget (5) is spent: a send to a real recipient answers like one to nobody.
    const real = await send(a, b.email, 1);
    expect(real.status).toBe(429);
    expect((await errorOf(real)).code).toBe("transfer_rate_limited");
    expect(real.headers.get("retry-after")).toBe("60");
    expect((await send(a, "ghost-9@example.test", 1)).status).toBe(429);
    // A replay, even after the recipient stopped accepting transfers, answers the transfer (completed by now: 200).
    await ended(a, first.id);
    await call("PATCH", "/api/v1/user/token-transfers/preferences", b.headers, { receive_disabled: true });
    const replay = await send(a, b.email.toUpperCase(), 10, "before-probing");
    expect(replay.status).toBe(200);
    expect(await replay.json()).toMatchObject({ id: first.id, status: "completed", applied: 10 });
    expect((await send(a, b.id, 10, "before-probing")).status).toBe(200);
    // The next minute, a new budget.
    clock.advance(60_000);
    expect((await send(a, "ghost-10@example.test", 1)).status).toBe(400);
  });

  it("the preview masks the recipient, answers alike for an unknown one and one who accepts none, moves nothing, and is rate-limited", async () => {
    const [a, b, closed] = [await newUser(), await newUser(), await newUser()];
    await call("PATCH", "/api/v1/user/token-transfers/preferences", closed.headers, { receive_disabled: true });
    const preview = async (recipient: string, amount = 10) => {
      const res = await call("POST", "/api/v1/user/token-transfers/preview", a.headers, { recipient, amount });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    expect((await preview(b.email)).body).toEqual({ recipient: "tr***@example.test", amount: 10, allowed: true, reason: null });
    const unknown = await preview("ghost@example.test");
    expect(unknown.body).toEqual(await preview(closed.email).then((p) => p.body));
    expect(unknown.body).toEqual({ recipient: null, amount: 10, allowed: false, reason: "recipient_unavailable" });
    expect((await preview(b.id, 5000)).body).toMatchObject({ allowed: false, reason: "send_limit" });
    expect(await quota(a)).toMatchObject({ reserved: 0, used: 0 });
    // lookups_per_minute: 5, and four were asked for.
    expect((await preview(b.email)).status).toBe(200);
    const sixth = await preview(b.email);
    expect(sixth.status).toBe(429);
  });
});

describe("history", () => {
  it("pages with a cursor, newest first, and refuses a cursor it did not give", async () => {
    const [a, b] = [await newUser(), await newUser()];
    await spend(b, 500);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await sent(a, b.email, 10 + i)).id);
    const first = await listOf(a, "?limit=2");
    expect(first.transfers.map((t) => t.id)).toEqual([ids[4], ids[3]]);
    const second = await listOf(a, `?limit=2&cursor=${encodeURIComponent(first.next_cursor!)}`);
    expect(second.transfers.map((t) => t.id)).toEqual([ids[2], ids[1]]);
    const third = await listOf(a, `?limit=2&cursor=${encodeURIComponent(second.next_cursor!)}`);
    expect(third.transfers.map((t) => t.id)).toEqual([ids[0]]);
    expect(third.next_cursor).toBeUndefined();
    for (const bad of ["?cursor=nope", "?limit=0", "?limit=101"]) {
      expect((await call("GET", `/api/v1/user/token-transfers${bad}`, a.headers)).status, bad).toBe(400);
    }
  });
});

describe("conservation", () => {
  it("over a random sequence of sends, completions, requests, resets and day changes, every account reconciles", async () => {
    const people = await Promise.all(Array.from({ length: 4 }, () => newUser()));
    let seed = 77;
    const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), Math.floor(seed / 2 ** 16) % n);
    let day = Date.parse("2026-11-26T12:00:00Z");
    for (let step = 0; step < 60; step++) {
      const op = next(10);
      const [from, to] = [people[next(4)]!, people[next(4)]!];
      if (op < 4) {
        if (from !== to) expect([202, 409, 400]).toContain((await send(from, to.email, 1 + next(300))).status);
      } else if (op < 6) await complete();
      else if (op < 8) {
        const q = await quota(from);
        if (q.remaining > 0) await spend(from, 1 + next(q.remaining));
      } else if (op === 8) expect([200, 409, 429]).toContain((await call("POST", "/api/v1/user/quota-resets/use", from.headers)).status);
      else if (next(3) === 0) {
        day += 86_400_000;
        clock.set(new Date(day));
      }
      expect(await reconcileLedger(db.pool), `step ${step}`).toEqual([]);
    }
    await complete();
    for (const p of people) await allEnded(p);
    // Every unit a recipient received is one a sender was charged for, transfer by transfer.
    const { rows } = await db.pool.query<{ id: string; applied: string; restored: string; charged: string }>(
      `select t.id::text, coalesce(t.applied, 0)::text as applied,
              coalesce((select sum(amount) from quota_restorations r where r.source = 'token_transfer' and r.reference = t.id::text), 0)::text as restored,
              coalesce((select charged from quota_holds h where h.id = t.hold_id and h.status = 'posted'), 0)::text as charged
         from token_transfers t where t.sender_id = any($1::uuid[])`,
      [people.map((p) => p.id)],
    );
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect([r.restored, r.charged], r.id).toEqual([r.applied, r.applied]);
    expect(rows.some((r) => r.applied !== "0")).toBe(true);
    clock.set(`${TODAY}T12:00:00Z`);
  });
});

// Last: it moves the shared clock.
describe("the day's end", () => {
  it("a pending transfer of a past day ends with no effect; limits renew and received units become forwardable", async () => {
    const [a, b, c] = [await newUser(), await newUser(), await newUser()];
    await spend(b, 700);
    await ended(c, (await sent(c, b.email, 50)).id);
    // Received today: not forwardable today (300 left of b's own, 50 received).
    expect((await listOf(b)).limits).toMatchObject({ transferable: 300, receiving_left: 650 });
    // Sent by a gateway that stopped before completing it; the backstop task runs after 00:00 UTC.
    const late = await pendingTransfer(db.pool, { senderId: a.id, recipientId: b.id, amount: 100n, day: TODAY, senderBase: BigInt(DAILY) });
    clock.set("2026-11-27T00:00:05Z");
    await complete();
    const { transfers, limits } = await listOf(a);
    expect(transfers.find((x) => x.id === late.id)).toMatchObject({ status: "refused", reason: "day_ended", applied: 0 });
    expect(limits).toMatchObject({ day: "2026-11-27", sending_left: 600, transferable: DAILY });
    // The refill ended at 00:00 UTC with the 26th; the 27th starts whole, its limits too.
    expect((await listOf(b)).limits).toMatchObject({ receiving_left: 700, transferable: DAILY });
    expect(await quota(b)).toMatchObject({ restored: 0, used: 0, remaining: DAILY });
    // Nothing moved by the late one: the hold on the sender's 26th was voided.
    const { rows } = await db.pool.query(
      "select period, debits_posted::text, debits_pending::text from quota_account_balances where user_id = $1 and kind = 'daily_allowance' order by period",
      [a.id],
    );
    expect(rows).toEqual([{ period: "2026-11-26", debits_posted: "0", debits_pending: "0" }]);
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });
});
