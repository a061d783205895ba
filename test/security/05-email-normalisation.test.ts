import { readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { normaliseEmail } from "../../src/auth/email.js";
import { migrationsFolder } from "../../src/db/migrate.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { postLogin } from "../helpers/login.js";

// Issue 20, item 5: the login throttle and the user lookup must agree on what one address is.

const PASSWORD = "normalised-pass-1";
const MAX = 3;

let gw: TestGateway;

const login = (email: string, password: string) => postLogin(gw.url, email, password);

beforeAll(async () => {
  gw = await startTestGateway({ config: { auth: { login_max_attempts: MAX, login_window_seconds: 600 } } });
});

afterAll(async () => {
  await gw?.close();
});

describe("normaliseEmail", () => {
  it("folds width, compatibility forms and case, and is idempotent", () => {
    expect(normaliseEmail(" ＲＩＴＡ@Example.COM ")).toBe("rita@example.com");
    expect(normaliseEmail("\u212Aate@example.com")).toBe("kate@example.com");
    expect(normaliseEmail("r\u0130ta@example.com")).toBe("ri\u0307ta@example.com");
    expect(normaliseEmail("ΟΔΥΣΣΕΥΣ@example.com")).toBe("οδυσσευσ@example.com");
    for (const s of ["r\u0130ta@x", "ＲＩＴＡ@x", "Ǆ@x", "ﬃ@x", "ΑΣ@x"]) expect(normaliseEmail(normaliseEmail(s))).toBe(normaliseEmail(s));
  });
});

describe("one address, one counter", () => {
  it("a locked address stays locked under every spelling, and a dotted capital I is not its i", async () => {
    await gw.services.auth.users.create({ email: "rita@example.com", password: PASSWORD });
    for (let i = 0; i < MAX; i++) expect((await login("rita@example.com", "wrong-password")).status).toBe(401);
    expect((await login("rita@example.com", PASSWORD)).status).toBe(429);
    expect((await login("r\u0130ta@example.com", PASSWORD)).status).toBe(401);
    expect((await login("ＲＩＴＡ@example.com", PASSWORD)).status).toBe(429);
    expect((await login(" RITA@EXAMPLE.COM", PASSWORD)).status).toBe(429);
  });

  it("stores the normalised form and finds it however it is typed", async () => {
    const created = await gw.services.auth.users.create({ email: " Sam@Example.COM ", password: PASSWORD });
    expect(created.email).toBe("sam@example.com");
    expect((await gw.services.auth.users.find("ＳＡＭ@example.com"))?.id).toBe(created.id);
    await expect(gw.services.auth.users.create({ email: "SAM@example.com", password: PASSWORD })).rejects.toMatchObject({
      code: "email_taken",
    });
    expect((await login("Sam@EXAMPLE.com", PASSWORD)).status).toBe(200);
  });
});

describe("the migration", () => {
  let db: TestDatabase;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db?.drop();
  });

  // Back to the schema before the migration, with addresses as the old code stored them.
  async function beforeMigration(emails: string[]) {
    await db.pool.query("delete from users");
    await db.pool.query("drop index users_email_key");
    await db.pool.query("create unique index users_email_lower_key on users (lower(email))");
    for (const email of emails) {
      await db.pool.query("insert into users (email, password_hash, plan) values ($1, 'x', 'default')", [email]);
    }
  }

  /**
   * Migration 0019 as the migrator applies it (its statements in one transaction), on its own: the migrator
   * would also run every later migration, whose objects the database already has.
   */
  async function runMigration0019() {
    const statements = readFileSync(path.join(migrationsFolder, "0019_normalised_emails.sql"), "utf8").split("--> statement-breakpoint");
    const client = await db.pool.connect();
    try {
      await client.query("begin");
      for (const statement of statements) await client.query(statement);
      await client.query("commit");
    } catch (err) {
      await client.query("rollback");
      throw err;
    } finally {
      client.release();
    }
  }

  it("normalises existing addresses", async () => {
    await beforeMigration(["Ann@Example.com", "r\u0130ta@example.com", "ＢＯＢ@example.com"]);
    await runMigration0019();
    const { rows } = await db.pool.query<{ email: string }>("select email from users order by email");
    expect(rows.map((r) => r.email)).toEqual(["ann@example.com", "bob@example.com", "ri\u0307ta@example.com"]);
  });

  it("refuses, naming both, when two addresses become one, and changes nothing", async () => {
    await beforeMigration(["Carl@Example.com", "ＣＡＲＬ@example.com"]);
    await expect(runMigration0019()).rejects.toThrow(/Carl@Example\.com, ＣＡＲＬ@example\.com.*carl@example\.com/);
    const { rows } = await db.pool.query<{ email: string }>("select email from users order by email");
    expect(rows.map((r) => r.email)).toEqual(["Carl@Example.com", "ＣＡＲＬ@example.com"]);
  });
});
