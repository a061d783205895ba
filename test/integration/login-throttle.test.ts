import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPool, type Pool } from "../../src/db/pool.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { postLogin } from "../helpers/login.js";

// Login attempts are counted per email address across every process sharing the database (docs/auth.md,
// "Login throttling"): at most login_max_attempts password checks per address and window.

const PASSWORD = "password-123";
const MAX = 3;
const WINDOW_SECONDS = 2;

let db: TestDatabase;
let first: TestGateway;
let secondPool: Pool;
let second: TestGateway;
let counter = 0;

const login = (gateway: TestGateway, email: string, password: string) => postLogin(gateway.url, email, password);

async function newUser(): Promise<string> {
  const email = `throttle-${Date.now()}-${++counter}@example.test`;
  await first.services.auth.users.create({ email, password: PASSWORD });
  return email;
}

beforeAll(async () => {
  db = await createTestDatabase();
  const config = { auth: { login_max_attempts: MAX, login_window_seconds: WINDOW_SECONDS } };
  first = await startTestGateway({ config, db });
  secondPool = createPool(db.url, 4, () => {});
  second = await startTestGateway({ config, db: { ...db, pool: secondPool } });
});

afterAll(async () => {
  await first?.close();
  await second?.close();
  await secondPool?.end();
  await db?.drop();
});

describe("login throttling", () => {
  it("refuses an address after its attempts with 429 and Retry-After, the right password too, until the window ends", async () => {
    const email = await newUser();
    for (let i = 0; i < MAX; i++) expect((await login(i % 2 ? second : first, email, "wrong-password")).status).toBe(401);
    const refused = await login(first, email, PASSWORD);
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(WINDOW_SECONDS);
    const body = (await refused.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ type: "rate_limit_error", code: "login_rate_limited", param: null });
    expect(JSON.stringify(body)).not.toContain(email);
    expect((await login(second, email, PASSWORD)).status).toBe(429);

    await new Promise((resolve) => setTimeout(resolve, WINDOW_SECONDS * 1000 + 100));
    expect((await login(second, email, PASSWORD)).status).toBe(200);
  });

  it("counts an address however it is spelled, and no other address", async () => {
    const email = await newUser();
    const other = await newUser();
    for (let i = 0; i < MAX; i++) await login(first, i % 2 ? ` ${email.toUpperCase()} ` : email, "wrong-password");
    expect((await login(first, email.toUpperCase(), PASSWORD)).status).toBe(429);
    expect((await login(first, other, PASSWORD)).status).toBe(200);
  });

  it("forgets the failures of an address whose owner logs in", async () => {
    const email = await newUser();
    for (let i = 0; i < MAX - 1; i++) expect((await login(first, email, "wrong-password")).status).toBe(401);
    expect((await login(first, email, PASSWORD)).status).toBe(200);
    for (let i = 0; i < MAX - 1; i++) expect((await login(second, email, "wrong-password")).status).toBe(401);
    expect((await login(second, email, PASSWORD)).status).toBe(200);
  });

  it("treats unknown addresses alike, so a 429 does not tell which addresses exist", async () => {
    const unknown = `nobody-${Date.now()}@example.test`;
    const statuses = [];
    for (let i = 0; i <= MAX; i++) statuses.push((await login(first, unknown, PASSWORD)).status);
    expect(statuses).toEqual([...Array(MAX).fill(401), 429]);
  });

  it("checks at most the allowed number of passwords when two processes race", async () => {
    const email = await newUser();
    const attempts = 24;
    const statuses = await Promise.all(
      Array.from({ length: attempts }, (_, i) => login(i % 2 ? second : first, email, "wrong-password").then((res) => res.status)),
    );
    expect(statuses.filter((status) => status === 401)).toHaveLength(MAX);
    expect(statuses.filter((status) => status === 429)).toHaveLength(attempts - MAX);
  });

  it("prunes counts whose window has ended, and only those", async () => {
    const email = await newUser();
    await login(first, email, "wrong-password");
    const key = createHash("sha256").update(email).digest("hex");
    const kept = async () => (await db.pool.query("select 1 from login_attempts where email_hash = $1", [key])).rowCount;
    await first.services.auth.sessions.pruneLoginAttempts(new Date());
    expect(await kept()).toBe(1);
    const removed = await first.services.auth.sessions.pruneLoginAttempts(new Date(Date.now() + (WINDOW_SECONDS + 1) * 1000));
    expect(removed).toBeGreaterThanOrEqual(1);
    expect(await kept()).toBe(0);
  });
});
