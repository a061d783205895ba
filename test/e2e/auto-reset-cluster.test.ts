import OpenAI from "openai";
import { describe, expect, it } from "vitest";
import { reconcileLedger } from "../../src/quota/index.js";
import { utcDay } from "../../src/time/day.js";
import { useClusterBench } from "../helpers/cluster-bench.js";
import type { GatewayCluster } from "../helpers/crash-cluster.js";
import type { TestDatabase } from "../helpers/db.js";
import { logIn } from "../helpers/login.js";

// The automatic reserve reset under a race (docs/billing.md, "Automatic resets"), with real processes: two
// `gateway serve` on one database, 60 units left of the day and two resets; 50 requests at once over both use
// exactly one reset, and never more is admitted than the allowance plus that one restoration. Then a manual use
// racing the automatic one.

const DAILY = 1000;
const WEEKLY = 2;
const PASSWORD = "auto-reset-cluster-pw";
const REQUESTS = 50;

describe("automatic resets over two gateway processes", () => {
  const bench = useClusterBench("gateway-e2e-auto-reset-");
  let db: TestDatabase;
  let cluster: GatewayCluster;
  let configFile: string;
  let users = 0;

  /** `faults`: the mock upstream's fault headers on every chat call (docs/mock-upstream.md, "Faults"). */
  async function start(faults: Record<string, number> = {}) {
    db = await bench.database();
    configFile = bench.writeConfig("auto-reset", {
      providers: { mock: { protocol: "openai", base_url: bench.upstream.baseUrl(faults), api_key: "mock-key" } },
      models: { chat: { kind: "chat", upstream: "mock-gpt-small", targets: ["mock"] } },
      plans: { std: { daily_tokens: DAILY, weekly_resets: WEEKLY, context_limit: 128_000 } },
      default_plan: "std",
    });
    cluster = bench.cluster({ configFile, databaseUrl: db.url, worker: false });
    await Promise.all([cluster.start(0), cluster.start(1)]);
  }

  /** A user with automatic resets on, a key, and `remaining` units left of today (a settled charge on the ledger). */
  async function userWith(remaining: number) {
    const email = `auto-reset-${++users}@example.test`;
    const user = await bench.cli(["users", "create", "--email", email, "--password", PASSWORD], configFile, db);
    const { key } = await bench.cli(["keys", "create", "--user", email], configFile, db);
    const { token } = await logIn(cluster.current[0]!.url, email, PASSWORD);
    const session = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    const put = await fetch(`${cluster.current[1]!.url}/api/v1/user/quota-resets`, {
      method: "PUT",
      headers: session,
      body: JSON.stringify({ auto_reset_enabled: true }),
    });
    expect(put.status).toBe(200);
    // What earlier requests of the day posted, as a posted hold of its own, so that the account reconciles.
    await db.pool.query(
      `with account as (
         insert into quota_accounts (user_id, kind, period, credits, debits_posted) values ($1, 'daily_allowance', $2, $3, $4) returning id
       )
       insert into quota_holds (account_id, amount, charged, status, request_id, resolved_at) select id, $4, $4, 'posted', 'earlier', now() from account`,
      [user.id, utcDay(new Date()), DAILY, DAILY - remaining],
    );
    const clients = cluster.current.map((p) => new OpenAI({ apiKey: key, baseURL: `${p.url}/v1`, maxRetries: 0 }));
    return { id: user.id!, session, clients };
  }

  const chat = (client: OpenAI) =>
    client.chat.completions.create({ model: "chat", messages: [{ role: "user", content: "hi" }], max_tokens: 5 });

  async function resetsOf(session: Record<string, string>) {
    const res = await fetch(`${cluster.current[0]!.url}/api/v1/user/quota-resets`, { headers: session });
    return (await res.json()) as { weekly_left: number; uses: { trigger: string; restored: number }[] };
  }

  async function dayOf(userId: string) {
    const { rows } = await db.pool.query<{ credits: string; restored: string; debits_posted: string }>(
      "select credits::text, restored::text, debits_posted::text from quota_account_balances where user_id = $1 and kind = 'daily_allowance'",
      [userId],
    );
    return { allowance: Number(rows[0]!.credits), restored: Number(rows[0]!.restored), posted: Number(rows[0]!.debits_posted) };
  }

  it("50 requests at once, 60 units left, two resets: all served, exactly one reset used", async () => {
    await start();
    const u = await userWith(60);
    const answers = await Promise.allSettled(Array.from({ length: REQUESTS }, (_, i) => chat(u.clients[i % 2]!)));
    expect(answers.filter((a) => a.status === "rejected")).toEqual([]);
    const resets = await resetsOf(u.session);
    expect(resets.weekly_left).toBe(WEEKLY - 1);
    expect(resets.uses).toHaveLength(1);
    expect(resets.uses[0]).toMatchObject({ trigger: "automatic", restored: DAILY - 60 });
    await cluster.stop();
    // Every process's settlements are in: never more used than the allowance and the one restoration.
    const day = await dayOf(u.id);
    expect(day.restored).toBe(DAILY - 60);
    expect(day.posted).toBeGreaterThan(DAILY - 60);
    expect(day.posted).toBeLessThanOrEqual(day.allowance + day.restored);
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });

  it("a manual use racing the automatic one: one reset", async () => {
    // The chats' answers take 5 s, so none of them posts a charge before the manual use is decided: the race is
    // between the two uses alone. (A manual use after a chat posted would rightly restore that spending with a
    // second reset, which on a loaded machine made this test's outcome depend on timing.)
    await start({ "x-mock-delay-ms": 5000 });
    const u = await userWith(60);
    const [manual, ...served] = await Promise.allSettled([
      fetch(`${cluster.current[1]!.url}/api/v1/user/quota-resets/use`, { method: "POST", headers: u.session }),
      ...Array.from({ length: 10 }, (_, i) => chat(u.clients[i % 2]!)),
    ]);
    expect(served.filter((a) => a.status === "rejected")).toEqual([]);
    expect(manual!.status).toBe("fulfilled");
    const status = (manual as PromiseFulfilledResult<Response>).value.status;
    expect([200, 409]).toContain(status);
    const resets = await resetsOf(u.session);
    expect(resets.uses).toHaveLength(1);
    expect(resets.uses[0]!.trigger).toBe(status === 200 ? "manual" : "automatic");
    expect(resets.weekly_left).toBe(WEEKLY - 1);
    await cluster.stop();
    expect(await reconcileLedger(db.pool)).toEqual([]);
  });
});
