import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/load.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { reconcileLedger } from "../../src/quota/index.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";
import { spendDay } from "../helpers/spend.js";
import { evaluate, evaluation, evaluator, judge } from "../helpers/systemone.js";

// Fixed-quota request packs (docs/billing.md, "Request packs") and the traffic that never uses a reserve reset
// automatically (docs/billing.md, "Automatic resets"): a pack's request, a reseller's pay-as-you-go request.

const PASSWORD = "password-123-packs";
const DAILY = 1000;
const PACK = 3;
const UPSTREAM = "mock-gpt-small";

let db: TestDatabase;
let mock: MockUpstream;
let proxy: FaultProxy;
let gw: TestGateway;
let other: TestGateway;
let users = 0;

interface Quota {
  used: number;
  reserved: number;
  remaining: number;
  request_packs: { model: string; allowance: number; used: number; reserved: number; remaining: number }[];
}

const json = (method: string, headers: Record<string, string>, body?: unknown): RequestInit => ({
  method,
  headers: { ...headers, "content-type": "application/json" },
  body: body === undefined ? undefined : JSON.stringify(body),
});

async function newUser(opts: { auto?: boolean; kind?: "inference" | "reseller" } = {}) {
  const email = `packs-${++users}@example.test`;
  const user = await gw.services.auth.users.create({ email, password: PASSWORD, plan: "std" });
  const { token } = await logIn(gw.url, email, PASSWORD);
  const session = { authorization: `Bearer ${token}` };
  const { key } = await gw.services.auth.apiKeys.create({ user: email, kind: opts.kind ?? "inference" });
  if (opts.auto)
    expect((await fetch(`${gw.url}/api/v1/user/quota-resets`, json("PUT", session, { auto_reset_enabled: true }))).status).toBe(200);
  return { id: user.id, session, key, auth: { authorization: `Bearer ${key}` } };
}

const chat = (auth: Record<string, string>, model: string, on: TestGateway = gw) =>
  fetch(`${on.url}/v1/chat/completions`, json("POST", auth, { model, messages: [{ role: "user", content: "hi" }], max_tokens: 5 }));

async function quota(session: Record<string, string>): Promise<Quota> {
  await gw.services.ledger.flush();
  await other.services.ledger.flush();
  return (await (await fetch(`${gw.url}/api/v1/user/quota`, { headers: session })).json()) as Quota;
}

const resetUses = async (session: Record<string, string>) =>
  ((await (await fetch(`${gw.url}/api/v1/user/quota-resets`, { headers: session })).json()) as { uses: unknown[] }).uses;

/** Spends today's allowance down to `remaining`, as settled requests would. */
const spendTo = (userId: string, remaining: number) => spendDay(gw.services, userId, DAILY, DAILY - remaining);

beforeAll(async () => {
  db = await createTestDatabase();
  mock = await startMockUpstream();
  proxy = await startFaultProxy(mock.url);
  const config = {
    providers: { mock: { protocol: "openai" as const, base_url: mock.baseUrl }, eval: evaluator(proxy) },
    models: {
      chat: { kind: "chat" as const, upstream: UPSTREAM, targets: ["mock"] },
      "pack-chat": { kind: "chat" as const, upstream: UPSTREAM, targets: ["mock"] },
      judge: judge(["eval"], { reseller_price: { input_usd_per_million: 0.25 } }),
    },
    plans: { std: { daily_tokens: DAILY, weekly_resets: 2, context_limit: 128_000, request_packs: { "pack-chat": PACK } } },
    default_plan: "std",
  };
  gw = await startTestGateway({ db, config });
  other = await startTestGateway({ db, config });
});

afterAll(async () => {
  await other?.close();
  await gw?.close();
  await proxy?.close();
  await mock?.close();
  await db?.drop();
});

describe("request packs", () => {
  it("count one request each, whatever the tokens, and leave the daily allowance alone; then the usual 429", async () => {
    const u = await newUser();
    for (let i = 0; i < PACK; i++) expect((await chat(u.auth, "pack-chat")).status).toBe(200);
    const refused = await chat(u.auth, "pack-chat");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    const error = ((await refused.json()) as { error: { code: string; message: string } }).error;
    expect(error.code).toBe("insufficient_quota");
    expect(error.message).toContain(`${PACK} of ${PACK} requests of the model 'pack-chat'`);
    const q = await quota(u.session);
    expect(q).toMatchObject({ used: 0, reserved: 0, remaining: DAILY });
    expect(q.request_packs).toEqual([{ model: "pack-chat", allowance: PACK, used: PACK, reserved: 0, remaining: 0 }]);
    // Another model still pays tokens on the day's allowance.
    expect((await chat(u.auth, "chat")).status).toBe(200);
    expect((await quota(u.session)).used).toBeGreaterThan(0);
    const { rows } = await db.pool.query<{ quota_charged: string }>(
      "select quota_charged::text from request_logs where user_id = $1 and public_model = 'pack-chat' and status = 200",
      [u.id],
    );
    expect(rows.map((r) => r.quota_charged)).toEqual(Array<string>(PACK).fill("0"));
  });

  it("are exact across two gateways: 10 racing requests on a pack of 3 serve exactly 3", async () => {
    const u = await newUser();
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => chat(u.auth, "pack-chat", i % 2 === 0 ? gw : other)));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(PACK);
    expect(answers.filter((a) => a.status === 429)).toHaveLength(10 - PACK);
    expect((await quota(u.session)).request_packs[0]).toMatchObject({ used: PACK, remaining: 0 });
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("are refused in the config for an unknown model or a video model", () => {
    const base = {
      providers: { mock: { protocol: "openai" as const, base_url: "http://127.0.0.1:9/v1" } },
      models: {
        chat: { kind: "chat" as const, upstream: "x", targets: ["mock"] },
        clip: {
          kind: "video" as const,
          upstream: "v",
          targets: ["mock"],
          video_price: { units_per_second: 1, default_seconds: 1, max_seconds: 2 },
        },
      },
    };
    const plan = (packs: Record<string, number>) => ({ std: { daily_tokens: 1, context_limit: 1, request_packs: packs } });
    expect(() => parseConfig({ ...base, plans: plan({ nope: 1 }), default_plan: "std" }, "t")).toThrow(
      /plans\.std\.request_packs\.nope.*unknown model/,
    );
    expect(() => parseConfig({ ...base, plans: plan({ clip: 1 }), default_plan: "std" }, "t")).toThrow(
      /video models cannot be request packs/,
    );
    expect(() => parseConfig({ ...base, plans: plan({ chat: 0 }), default_plan: "std" }, "t")).toThrow(/request_packs/);
  });
});

describe("exempt from automatic resets", () => {
  it("a request pack's requests, with the day under the threshold", async () => {
    const u = await newUser({ auto: true });
    await spendTo(u.id, 20);
    for (let i = 0; i < PACK; i++) expect((await chat(u.auth, "pack-chat")).status).toBe(200);
    expect(await resetUses(u.session)).toEqual([]);
    // The control: a request that pays tokens uses one.
    expect((await chat(u.auth, "chat")).status).toBe(200);
    expect(await resetUses(u.session)).toHaveLength(1);
  });

  it("a reseller's pay-as-you-go request, with the day under the threshold", async () => {
    const u = await newUser({ auto: true, kind: "reseller" });
    await gw.services.resellers.credit(u.id, "10", "test");
    await spendTo(u.id, 20);
    const res = await evaluate(gw.url, u.key, evaluation("judge"));
    expect(res.status).toBe(200);
    expect(await resetUses(u.session)).toEqual([]);
    expect((await quota(u.session)).remaining).toBe(20);
  });
});
