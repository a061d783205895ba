import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPasswordHasher } from "../../src/auth/passwords.js";
import { createSemaphore } from "../../src/auth/semaphore.js";
import { errorLines, gateway, tempDir } from "../helpers/cli.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { postLogin } from "../helpers/login.js";

// Issue 20, item 11: OWASP password rules (length, no common password) and scrypt N=2^17 with a bounded number
// of computations at once, and hashes upgraded at the next login.

const ADMIN = { email: "admin@example.test", password: "admin-password-11" };

let gw: TestGateway;
let admin: { token: string; csrf: string };

const login = (email: string, password: string) => postLogin(gw.url, email, password);

const createUser = (email: string, password: string) =>
  fetch(`${gw.url}/api/v1/admin/users`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${admin.token}`, "x-csrf-token": admin.csrf },
    body: JSON.stringify({ email, password }),
  });

beforeAll(async () => {
  gw = await startTestGateway();
  await gw.services.auth.users.create({ ...ADMIN, role: "admin" });
  const session = (await (await login(ADMIN.email, ADMIN.password)).json()) as { token: string; csrf_token: string };
  admin = { token: session.token, csrf: session.csrf_token };
});

afterAll(async () => {
  await gw?.close();
});

describe("new passwords over HTTP", () => {
  it.each([
    ["12345678", "password must be at least 12 characters long."],
    ["eleven-char", "password must be at least 12 characters long."],
    ["qwerty123456", "password is one of the most common passwords; choose another."],
    ["QWERTY123456", "password is one of the most common passwords; choose another."],
    ["1q2w3e4r5t6y", "password is one of the most common passwords; choose another."],
  ])("refuses %j with 400 naming the rule", async (password, message) => {
    const res = await createUser(`refused-${password}@example.test`.toLowerCase(), password);
    expect(res.status).toBe(400);
    const body = (await res.json()) as { error: Record<string, unknown> };
    expect(body.error).toMatchObject({ message, param: "password" });
  });

  it("accepts a long uncommon password", async () => {
    expect((await createUser("fine@example.test", "plum velvet orbit")).status).toBe(201);
  });

  it("honours auth.password_min_length", async () => {
    const strict = await startTestGateway({ config: { auth: { password_min_length: 20 } } });
    try {
      await expect(strict.services.auth.users.create({ email: "a@example.test", password: "plum velvet orbit" })).rejects.toThrow(
        "password must be at least 20 characters long.",
      );
    } finally {
      await strict.close();
    }
  });
});

describe("scrypt parameters", () => {
  it("defaults to N=2^17, r=8, p=1", async () => {
    const { hash } = createPasswordHasher({ logN: 17, concurrency: 1 });
    expect(await hash("plum velvet orbit")).toMatch(/^scrypt\$131072\$8\$1\$/);
  });

  it("upgrades a hash with old parameters at the next successful login, not at a failed one", async () => {
    const old = createPasswordHasher({ logN: 10, concurrency: 1 });
    const stale = await old.hash("upgrade-me-please");
    expect(stale).toMatch(/^scrypt\$1024\$/);
    const current = await startTestGateway({ db: gw.db, config: { auth: { password_hash: { log_n: 11 } } } });
    try {
      const [row] = (
        await gw.db.pool.query<{ id: string }>(
          "insert into users (email, password_hash, plan) values ('old@example.test', $1, 'default') returning id",
          [stale],
        )
      ).rows;
      const stored = async () =>
        (await gw.db.pool.query<{ password_hash: string }>("select password_hash from users where id = $1", [row!.id])).rows[0]!
          .password_hash;
      const at = (password: string) => postLogin(current.url, "old@example.test", password);
      expect((await at("not-the-password")).status).toBe(401);
      expect(await stored()).toBe(stale);
      expect((await at("upgrade-me-please")).status).toBe(200);
      const upgraded = await stored();
      expect(upgraded).toMatch(/^scrypt\$2048\$8\$1\$/);
      expect((await at("upgrade-me-please")).status).toBe(200);
      expect(await stored()).toBe(upgraded);
    } finally {
      await current.close();
    }
  });
});

describe("the semaphore", () => {
  it("runs at most its limit at once, the rest in arrival order, and passes results and errors through", async () => {
    const slots = createSemaphore(2);
    let running = 0;
    let most = 0;
    const started: number[] = [];
    const releases: (() => void)[] = [];
    const tasks = Array.from({ length: 8 }, (_, i) =>
      slots.run(async () => {
        started.push(i);
        running++;
        most = Math.max(most, running);
        await new Promise<void>((resolve) => releases.push(resolve));
        running--;
        if (i === 5) throw new Error("task 5");
        return i;
      }),
    );
    const settled = Promise.allSettled(tasks);
    while (started.length < 8) {
      await new Promise((resolve) => setImmediate(resolve));
      expect(running).toBeLessThanOrEqual(2);
      releases.shift()?.();
    }
    for (const release of releases) release();
    const results = await settled;
    expect(most).toBe(2);
    expect(started).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(results[5]).toMatchObject({ status: "rejected", reason: new Error("task 5") });
    expect(results.filter((r) => r.status === "fulfilled").map((r) => r.value)).toEqual([0, 1, 2, 3, 4, 6, 7]);
  });

  it("bounds the hasher's scrypt computations", async () => {
    const hasher = createPasswordHasher({ logN: 10, concurrency: 1 });
    // With one slot the hashes are computed one after another; all complete.
    const hashes = await Promise.all(Array.from({ length: 6 }, (_, i) => hasher.hash(`password number ${i}`)));
    expect(new Set(hashes).size).toBe(6);
    for (const [i, h] of hashes.entries()) expect(await hasher.verify(`password number ${i}`, h)).toBe(true);
  });
});

describe("the CLI", () => {
  let work: Awaited<ReturnType<typeof tempDir>>;
  let db: TestDatabase;
  let configFile: string;

  beforeAll(async () => {
    work = await tempDir("gateway-security-11-");
    db = await createTestDatabase();
    configFile = path.join(work.dir, "gateway.yaml");
    const config = {
      providers: { main: { protocol: "openai", base_url: "http://127.0.0.1:9/v1" } },
      models: { m1: { kind: "chat", upstream: "m1", targets: ["main"] } },
    };
    writeFileSync(configFile, JSON.stringify(config));
  });
  afterAll(async () => {
    await db?.drop();
    await work?.remove();
  });

  it.each([
    ["short-pass", "password must be at least 12 characters long."],
    ["123qweasdzxc", "password is one of the most common passwords; choose another."],
  ])("users create refuses %j with the same message, one line", async (password, message) => {
    const run = await gateway(["users", "create", "--email", "cli@example.test", "--password", password, "--config", configFile], {
      cwd: work.dir,
      env: { DATABASE_URL: db.url },
    });
    expect(run.exitCode).not.toBe(0);
    expect(errorLines(run.stderr)).toEqual([expect.stringContaining(message)]);
  });
});
