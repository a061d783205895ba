import { beforeAll, describe, expect, it } from "vitest";
import { systemOneResellerPrice, systemOneUpstreamCost } from "../../src/billing/systemone.js";
import { formatUsd, parseUsd } from "../../src/billing/usd.js";
import type { FaultProxy } from "../helpers/fault-proxy.js";
import type { TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";
import { quiesce, rowsOf } from "../helpers/metering-checks.js";
import { evaluate, evaluation, evaluator, judge, useEvaluationGateway } from "../helpers/systemone.js";

// Reseller pay-as-you-go on the evaluation service: the model's price profile, `usage.cost` in the answer,
// the USD balance debited at settlement (exact nano-dollars in the database), refusals (no price profile, an
// exhausted balance), a failure releasing the hold, the upstream cost estimate in the request log, and the
// operator's credit endpoint with CSRF.

const PRICE = 0.25; // USD per million input tokens
const PASSWORD = "password-123";
let proxy: FaultProxy;
let gw: TestGateway;
let users = 0;

const fixture = useEvaluationGateway((proxy) => ({
  providers: { main: evaluator(proxy), broken: evaluator(proxy, { "x-mock-status": 503 }) },
  models: {
    judge: judge(["main"], { reseller_price: { input_usd_per_million: PRICE }, reseller_aliases: ["acme-judge"], token_multiplier: 3 }),
    "judge-custom": judge(["main"], { upstream: "systemone-1.13.0", reseller_price: { input_usd_per_million: PRICE } }),
    "judge-latest": judge(["main"], { upstream: "latest", reseller_price: { input_usd_per_million: PRICE } }),
    "judge-unpriced": judge(["main"]),
    "judge-down": judge(["broken"], { reseller_price: { input_usd_per_million: PRICE } }),
  },
  systemone: { rate_cards: { "systemone-1.13.0": { input_usd_per_million: 0.05, output_usd_per_million: 0.01 } } },
  plans: { basic: { daily_tokens: 1_000_000, context_limit: 100_000 } },
  default_plan: "basic",
}));
beforeAll(() => void ({ proxy, gw } = fixture));

async function reseller(credit?: string) {
  const email = `reseller-${++users}@example.test`;
  const user = await gw.services.auth.users.create({ email, password: PASSWORD });
  const { key } = await gw.services.auth.apiKeys.create({ user: user.id, kind: "reseller" });
  if (credit) await gw.services.resellers.credit(user.id, credit, "test");
  return { id: user.id, email, key };
}

const account = async (userId: string) => {
  await quiesce(gw);
  return rowsOf(
    gw.db.pool,
    "select kind, credits::text, debits_posted::text, debits_pending::text from quota_account_balances where user_id = $1",
    [userId],
  );
};
const logOf = async (requestId: string | null) =>
  (await rowsOf(gw.db.pool, "select * from request_logs where request_id = $1", [requestId]))[0]!;

describe("reseller pay-as-you-go", () => {
  it("prices the answer at the profile, shows it as usage.cost and debits the USD balance at settlement", async () => {
    const user = await reseller("10");
    const res = await evaluate(gw.url, user.key, evaluation("acme-judge"));
    expect(res.status).toBe(200);
    const usage = res.json.usage as { input_tokens: number; output_tokens: number; cost: number };
    const nano = systemOneResellerPrice(usage.input_tokens, PRICE, undefined);
    expect(nano).toBeGreaterThan(0n);
    expect(usage.cost).toBe(Number(formatUsd(nano)));
    expect(Object.keys(usage)).toEqual(["input_tokens", "output_tokens", "cost"]);
    expect(res.json.model).toBe("acme-judge");

    // The balance is in nano-dollars: 10 USD credited, the exact price spent; the day's allowance untouched.
    expect(await account(user.id)).toEqual([
      { kind: "reseller_usd", credits: "10000000000", debits_posted: String(nano), debits_pending: "0" },
    ]);
    const log = await logOf(res.headers.get("x-request-id"));
    // token_multiplier and pricing groups are quota matters: the reseller pays the profile only.
    expect(log).toMatchObject({ status: 200, quota_charged: "0", cost_usd: formatUsd(nano), public_model: "acme-judge" });
    // Version 1.13.0 at 0.042 USD per million input tokens, output free.
    expect(log.upstream_cost_usd).toBe(
      systemOneUpstreamCost(usage.input_tokens, usage.output_tokens, { input_usd_per_million: 0.042, output_usd_per_million: 0 }),
    );
    const hold = (await rowsOf(gw.db.pool, "select status, charged::text from quota_holds where request_id = $1", [log.request_id]))[0];
    expect(hold).toEqual({ status: "posted", charged: String(nano) });

    const balance = await gw.services.resellers.balance(user.id);
    expect(balance).toEqual({
      user_id: user.id,
      credited_usd: "10",
      spent_usd: formatUsd(nano),
      reserved_usd: "0",
      available_usd: formatUsd(10_000_000_000n - nano),
    });
  });

  it("logs the configured rate card's estimate first, and an unknown cost (null, never 0) without one", async () => {
    const user = await reseller("1");
    const custom = await evaluate(gw.url, user.key, evaluation("judge-custom"));
    const usage = custom.json.usage as { input_tokens: number; output_tokens: number };
    await quiesce(gw);
    expect((await logOf(custom.headers.get("x-request-id"))).upstream_cost_usd).toBe(
      systemOneUpstreamCost(usage.input_tokens, usage.output_tokens, { input_usd_per_million: 0.05, output_usd_per_million: 0.01 }),
    );
    const latest = await evaluate(gw.url, user.key, evaluation("judge-latest"));
    expect(latest.status).toBe(200);
    await quiesce(gw);
    expect((await logOf(latest.headers.get("x-request-id"))).upstream_cost_usd).toBeNull();
  });

  it("refuses a model without a price profile with 403, and an exhausted balance with 429 before any upstream call", async () => {
    const user = await reseller("0.000000001");
    const unpriced = await evaluate(gw.url, user.key, evaluation("judge-unpriced"));
    expect(unpriced.status).toBe(403);
    expect(unpriced.json.error).toMatchObject({ code: "model_not_priced", param: "model" });
    const before = proxy.requests.length;
    const poor = await evaluate(gw.url, user.key, evaluation("judge"));
    expect(poor.status).toBe(429);
    expect(poor.json.error).toMatchObject({ type: "rate_limit_error", code: "insufficient_balance" });
    expect((poor.json.error as { message: string }).message).toContain("0.000000001 USD available");
    expect(poor.headers.get("retry-after")).toBeNull();
    expect(proxy.requests.length).toBe(before);
    const never = await reseller();
    expect((await evaluate(gw.url, never.key, evaluation("judge"))).status).toBe(429);
  });

  it("releases the reseller hold when the upstream fails", async () => {
    const user = await reseller("1");
    const res = await evaluate(gw.url, user.key, evaluation("judge-down"));
    expect(res.status).toBe(502);
    expect(await account(user.id)).toEqual([{ kind: "reseller_usd", credits: "1000000000", debits_posted: "0", debits_pending: "0" }]);
    const hold = (
      await rowsOf(gw.db.pool, "select status, charged from quota_holds where request_id = $1", [res.headers.get("x-request-id")])
    )[0];
    expect(hold).toEqual({ status: "voided", charged: null });
    expect(await logOf(res.headers.get("x-request-id"))).toMatchObject({
      status: 502,
      cost_usd: null,
      upstream_cost_usd: null,
      quota_charged: "0",
    });
  });

  it("shows cost_usd in the user's own request list", async () => {
    const user = await reseller("1");
    const res = await evaluate(gw.url, user.key, evaluation("judge"));
    await quiesce(gw);
    const { token } = await logIn(gw.url, user.email, PASSWORD);
    const list = (await (await fetch(`${gw.url}/api/v1/user/requests`, { headers: { authorization: `Bearer ${token}` } })).json()) as {
      requests: Record<string, unknown>[];
    };
    expect(list.requests[0]).toMatchObject({
      request_id: res.headers.get("x-request-id"),
      quota_charged: 0,
      cost_usd: (res.json.usage as { cost: number }).cost,
    });
    expect(JSON.stringify(list)).not.toContain("upstream_cost");
  });

  it("shows a user their own balance, exact, and nobody else's", async () => {
    const user = await reseller("2.5");
    const other = await reseller("7");
    const res = await evaluate(gw.url, user.key, evaluation("judge"));
    await quiesce(gw);
    const spent = formatUsd(systemOneResellerPrice((res.json.usage as { input_tokens: number }).input_tokens, PRICE, undefined));
    const { token } = await logIn(gw.url, user.email, PASSWORD);
    const own = await fetch(`${gw.url}/api/v1/user/reseller-balance`, { headers: { authorization: `Bearer ${token}` } });
    expect(own.status).toBe(200);
    const balance = (await own.json()) as Record<string, string>;
    expect(balance).toMatchObject({ user_id: user.id, credited_usd: "2.5", spent_usd: spent });
    expect(parseUsd(balance.available_usd!)! + parseUsd(balance.reserved_usd!)! + parseUsd(spent)!).toBe(parseUsd("2.5"));
    expect(JSON.stringify(balance)).not.toContain(other.id);
    // An API key is not a session.
    expect((await fetch(`${gw.url}/api/v1/user/reseller-balance`, { headers: { authorization: `Bearer ${user.key}` } })).status).toBe(401);
  });
});

describe("admin: reseller balances", () => {
  async function admin() {
    const email = `admin-${++users}@example.test`;
    await gw.services.auth.users.create({ email, password: PASSWORD, role: "admin" });
    const { token, csrfToken: csrf } = await logIn(gw.url, email, PASSWORD);
    return { authorization: `Bearer ${token}`, csrf };
  }
  const credit = (headers: Record<string, string>, user: string, body: unknown) =>
    fetch(`${gw.url}/api/v1/admin/reseller-balances/${encodeURIComponent(user)}/credits`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
    });

  it("credits exact decimal USD with CSRF, and shows the balance", async () => {
    const { authorization, csrf } = await admin();
    const user = await reseller();
    expect((await credit({ authorization }, user.email, { usd: "5" })).status).toBe(403);
    const first = await credit({ authorization, "x-csrf-token": csrf }, user.email, { usd: "12.345678901", note: "invoice 42" });
    expect(first.status).toBe(201);
    expect(await first.json()).toEqual({
      user_id: user.id,
      credited_usd: "12.345678901",
      spent_usd: "0",
      reserved_usd: "0",
      available_usd: "12.345678901",
    });
    for (const usd of ["-1", "0", "1e3", "0.0000000001", "abc", "1000000001"]) {
      const bad = await credit({ authorization, "x-csrf-token": csrf }, user.email, { usd });
      expect(bad.status, usd).toBe(400);
      expect(((await bad.json()) as { error: { param: string } }).error.param).toBe("usd");
    }
    expect((await credit({ authorization, "x-csrf-token": csrf }, "nobody@example.test", { usd: "1" })).status).toBe(404);
    const balance = await fetch(`${gw.url}/api/v1/admin/reseller-balances/${user.id}`, { headers: { authorization } });
    expect(await balance.json()).toMatchObject({ credited_usd: "12.345678901" });
    const asUser = await fetch(`${gw.url}/api/v1/admin/reseller-balances/${user.id}`, { headers: { authorization: `Bearer ${user.key}` } });
    expect(asUser.status).toBe(401);
  });
});
