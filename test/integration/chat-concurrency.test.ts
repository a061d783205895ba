import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatQuota, type ChatRates } from "../../src/billing/chat-quota.js";
import { createPool, type Pool } from "../../src/db/pool.js";
import { estimatePromptTokens } from "../../src/metering/estimate.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { countLogWrites, rowsOf, settled } from "../helpers/metering-checks.js";

// docs/architecture.md, "Rules": reservations are atomic across gateway processes. One user near the allowance fires 200
// chat requests (JSON and streams mixed) at two gateways sharing one database; the ledger must never hold
// more than the allowance and must equal the request log, request for request.

const REQUESTS = 200;
const MAX_TOKENS = 16;
const RATES: ChatRates = { tokenMultiplier: 1.5, completionRatio: 2, cachedRatio: 1, groupMultiplier: 1 };
/** Same length for every request, so each reserves the same R units. */
const messagesOf = (i: number) => [{ role: "user", content: `concurrent request #${String(i).padStart(3, "0")}` }];
const R = chatQuota({ promptTokens: estimatePromptTokens(messagesOf(0)), completionTokens: MAX_TOKENS, cachedTokens: 0 }, RATES);
const ALLOWANCE = 60n * R;

let mock: MockUpstream;
let db: TestDatabase;
let secondPool: Pool;
let gateways: TestGateway[] = [];

beforeAll(async () => {
  mock = await startMockUpstream();
  db = await createTestDatabase();
  secondPool = createPool(db.url, 10, () => {});
  const config = {
    providers: { main: { protocol: "openai" as const, base_url: mock.baseUrl } },
    models: {
      m1: { kind: "chat" as const, upstream: "mock-gpt-small", targets: ["main"], token_multiplier: 1.5, completion_ratio: 2 },
    },
    plans: { tight: { daily_tokens: Number(ALLOWANCE), context_limit: 100_000 } },
    default_plan: "tight",
  };
  // Two gateway processes: separate services (ledger, key cache, log writer, instance) and pools, one database.
  gateways = [await startTestGateway({ config, db }), await startTestGateway({ config, db: { ...db, pool: secondPool } })];
  gateways.forEach(countLogWrites);
});

afterAll(async () => {
  for (const gw of gateways) await gw.close();
  await secondPool?.end();
  await db?.drop();
  await mock?.close();
});

/** One request; returns its status after reading the whole answer (a stream to its end). */
async function send(gw: TestGateway, key: string, i: number): Promise<{ status: number; body: string }> {
  const stream = i % 2 === 1;
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "m1", messages: messagesOf(i), max_tokens: MAX_TOKENS, stream }),
  });
  const body = await res.text();
  if (res.status === 200 && stream) expect(body.trimEnd().endsWith("data: [DONE]")).toBe(true);
  return { status: res.status, body };
}

describe("200 parallel requests of one user over two gateways", () => {
  it("never charges more than the allowance, and the ledger equals the log", async () => {
    const [first] = gateways;
    const user = await first!.services.auth.users.create({ email: "busy@example.test", password: "password-123" });
    const { key } = await first!.services.auth.apiKeys.create({ user: user.id });

    const results = await Promise.all(Array.from({ length: REQUESTS }, (_, i) => send(gateways[i % 2]!, key, i)));
    const ok = results.filter((r) => r.status === 200);
    const refused = results.filter((r) => r.status === 429);
    expect(ok.length + refused.length, `statuses: ${[...new Set(results.map((r) => r.status))].join(", ")}`).toBe(REQUESTS);
    expect(ok.length).toBeGreaterThan(0);
    expect(refused.length).toBeGreaterThan(0);
    for (const r of refused) expect(JSON.parse(r.body)).toMatchObject({ error: { code: "insufficient_quota", type: "rate_limit_error" } });

    // settled() checks: one hold per admitted request, none pending, debits_pending 0, and per request and in
    // sum the log's quota_charged equals the ledger's posted charge.
    const s = await settled(gateways, user.id, ok.length);
    const posted = BigInt(s.account.debits_posted as string);
    expect(posted).toBeGreaterThan(0n);
    expect(posted).toBeLessThanOrEqual(ALLOWANCE);
    expect(s.holds.filter((h) => h.status === "posted")).toHaveLength(ok.length);
    expect(s.logs).toHaveLength(REQUESTS);
    expect(s.logs.filter((l) => l.status === 200)).toHaveLength(ok.length);
    expect(s.logs.filter((l) => l.status === 429 && l.error_class === "quota_exceeded")).toHaveLength(refused.length);
    expect(s.logs.filter((l) => l.status === 200 && l.usage_source !== "upstream")).toEqual([]);
    // Both processes raced for the one account: each opened its lease on it. (Which of them admitted requests is
    // up to the race: under load one process can lease the whole allowance before the other's first sync.)
    const instances = await rowsOf(db.pool, "select count(distinct instance_id)::int as n from quota_leases", []);
    expect(instances[0]!.n).toBe(2);
    console.log(`chat concurrency: ${ok.length} admitted, ${refused.length} refused, ${posted} of ${ALLOWANCE} units posted (R = ${R})`);
  });
});
