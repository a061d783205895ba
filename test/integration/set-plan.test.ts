import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, type Pool } from "../../src/db/pool.js";
import { createServices, type Services } from "../../src/runtime/services.js";
import { createLogger } from "../../src/logger.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestGateway, testConfig, type TestGateway } from "../helpers/gateway-app.js";

// `gateway users set-plan` runs in a process of its own, and the plan applies at once: a serving process whose
// key cache holds the user's key with the old plan hears of the change by NOTIFY, as of a revocation.

const PLANS = {
  plans: {
    free: { daily_tokens: 1000, context_limit: 1000 },
    // A plan that may use no model: its keys list none.
    closed: { daily_tokens: 1000, context_limit: 1000, models: [] },
  },
  default_plan: "free",
};

let db: TestDatabase;
let serving: TestGateway;
let adminPool: Pool;
let admin: Services;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const listed = async (key: string) => {
  const res = await fetch(`${serving.url}/v1/models`, { headers: { authorization: `Bearer ${key}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id);
};

beforeAll(async () => {
  db = await createTestDatabase();
  serving = await startTestGateway({ db, config: PLANS });
  adminPool = createPool(db.url, 2, () => {});
  admin = await createServices({ config: testConfig(PLANS), pool: adminPool, logger: createLogger("silent"), env: {}, serving: false });
});

afterAll(async () => {
  await serving?.close();
  await admin?.close();
  await adminPool?.end();
  await db?.drop();
});

describe("a plan change", () => {
  it("reaches a serving process's cached key at once, by NOTIFY", async () => {
    await admin.auth.users.create({ email: "planned@example.test", password: "password-123-plan" });
    const { key } = await admin.auth.apiKeys.create({ user: "planned@example.test" });
    // Cached with the free plan.
    expect(await listed(key)).toEqual(["m1"]);
    expect(await listed(key)).toEqual(["m1"]);
    await admin.auth.users.setPlan("planned@example.test", "closed");
    // NOTIFY is asynchronous: poll, assert no timing (the cache's TTL is 60 s, far beyond this).
    let models = ["m1"];
    for (const deadline = Date.now() + 2_000; Date.now() < deadline && models.length > 0; await sleep(20)) models = await listed(key);
    expect(models).toEqual([]);
  });
});
