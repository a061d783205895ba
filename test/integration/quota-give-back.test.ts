import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { QUOTA_CHANNEL } from "../../src/quota/give-back.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { reconcileLedger } from "../../src/quota/index.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { quiesce, rowsOf } from "../helpers/metering-checks.js";

// Never a 429 while the account has room (docs/billing.md, "Escrow"): a user spending their day alternately through
// several gateway processes gets every request the day can still hold, to the last units; a process short of units
// has the others give back what they hold unused before it refuses (src/quota/give-back.ts). Before, a process
// refused while another sat on unused leased units (182 units left, 73 of them in the other process's lease, a
// request of 139: 429). A process asks only the processes that hold a lease on the account, and waits for each
// one's answer: alone on it, it refuses without asking, even with units held by no process (a durable hold).

const ALLOWANCE = 2_000;

let mock: MockUpstream;
let db: TestDatabase;
const gateways: TestGateway[] = [];
let users = 0;
/** Every message on the give-back channel, as the processes sent them. */
const heard: string[] = [];
let observer: pg.Client;

beforeAll(async () => {
  mock = await startMockUpstream();
  db = await createTestDatabase();
  observer = new pg.Client({ connectionString: db.url });
  await observer.connect();
  observer.on("notification", (n) => heard.push(n.payload ?? ""));
  await observer.query(`listen ${QUOTA_CHANNEL}`);
  for (let i = 0; i < 3; i++) {
    gateways.push(
      await startTestGateway({
        db,
        config: {
          providers: { mock: { protocol: "openai", base_url: mock.baseUrl } },
          models: { chat: { kind: "chat", upstream: "mock-gpt-small", targets: ["mock"] } },
          plans: { day: { daily_tokens: ALLOWANCE, context_limit: 100_000 } },
          default_plan: "day",
          // Leases keep their units between requests (the default gives them back after 2 s idle).
          quota: { lease_idle_ms: 60_000 },
        },
      }),
    );
  }
});
afterAll(async () => {
  await observer?.end();
  for (const gw of gateways) await gw.close();
  await mock?.close();
  await db?.drop();
});

async function freshUser(gw: TestGateway) {
  const email = `give-back-${++users}@example.test`;
  const user = await gw.services.auth.users.create({ email, password: "password-123", plan: "day" });
  const { key } = await gw.services.auth.apiKeys.create({ user: email });
  return { id: user.id, key };
}

function chat(gw: TestGateway, key: string, maxTokens: number) {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "chat", messages: [{ role: "user", content: "Say hi" }], max_tokens: maxTokens }),
    signal: AbortSignal.timeout(10_000),
  });
}

/** The user's day: its allowance and what was used (posted); what is held once every lease gave back. */
async function day(userId: string) {
  const [row] = await rowsOf(
    db.pool,
    "select credits, restored, debits_posted, debits_pending from quota_account_balances where user_id = $1",
    [userId],
  );
  return { allowance: BigInt(row!.credits as string) + BigInt(row!.restored as string), used: BigInt(row!.debits_posted as string) };
}

describe.each([1, 2, 3])("a day spent alternately through %i gateway processes", (processes) => {
  it("is spent to its last units: the first 429 comes only when no request's hold fits what is left", async () => {
    const on = gateways.slice(0, processes);
    const user = await freshUser(on[0]!);
    // Each request holds its prompt's estimate plus max_tokens (about 135 units) and is charged far less (the mock
    // answers a few words): after a few rounds, what is left is a few holds' worth, spread over the processes'
    // leases.
    const maxTokens = 130;
    // A durable hold (a video job's, a transfer's) is held by no process: nobody to ask for it.
    const durable = 300n;
    await on[0]!.services.ledger.reserveDurable({
      kind: "daily_allowance",
      userId: user.id,
      base: BigInt(ALLOWANCE),
      id: crypto.randomUUID(),
      amount: durable,
      reference: "video:give-back-test",
      expiresAt: new Date(Date.now() + 3_600_000),
    });
    let refused: Response | undefined;
    let answered = 0;
    for (let i = 0; i < 200 && !refused; i++) {
      const res = await chat(on[i % processes]!, user.key, maxTokens);
      if (res.status === 429) refused = res;
      else {
        expect(res.status).toBe(200);
        await res.arrayBuffer();
        answered++;
      }
    }
    expect(refused, "the day ran out").toBeDefined();
    expect(answered).toBeGreaterThan(processes * 3);
    // The request that was refused could not have been held by all the processes together: with nothing in flight,
    // what is left of the day is less than its hold.
    for (const gw of on) await quiesce(gw);
    const { allowance, used } = await day(user.id);
    const [hold] = await rowsOf(
      db.pool,
      "select amount from quota_holds h join quota_accounts a on a.id = h.account_id where a.user_id = $1 and h.lease_id is not null limit 1",
      [user.id],
    );
    expect(allowance - used - durable).toBeLessThan(BigInt(hold!.amount as string));
    expect(await reconcileLedger(db.pool)).toEqual([]);
    // Asked only where another process held a lease on the account, and answered by it.
    const [account] = await rowsOf(db.pool, "select id from quota_accounts where user_id = $1", [user.id]);
    const about = (verb: string) => heard.filter((m) => m.startsWith(`${verb}:${String(account!.id)}:`));
    if (processes === 1) expect(about("ask")).toEqual([]);
    else {
      expect(about("ask").length).toBeGreaterThan(0);
      const asked = new Set(about("ask").map((m) => m.split(":")[2]));
      expect(about("gave").filter((m) => asked.has(m.split(":")[2])).length).toBeGreaterThan(0);
    }
  });
});
