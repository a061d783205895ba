import { randomUUID } from "node:crypto";
import { DrizzleQueryError } from "drizzle-orm/errors";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "../../src/logger.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";

// Issue 20, item 1: text PostgreSQL cannot store (NUL, lone surrogates) is a 400 naming the field on every route
// that takes text into SQL, never a 500; and no log line carries a query's parameters or an unbounded value.

const PASSWORD = "password-123";
const BOT = "bot-token-for-the-security-suite-0123456789";
const MARKER = "hostile-marker-7f3a";
const LINE_MAX = 8 * 1024;

const lines: string[] = [];
const logger = createLogger("debug", { write: (line: string) => void lines.push(line) });

let gw: TestGateway;
let admin: Record<string, string>;
let user: Record<string, string>;

const login = async (email: string) => (await logIn(gw.url, email, PASSWORD)).headers;

beforeAll(async () => {
  gw = await startTestGateway({ env: { SUPPORT_BOT_TOKEN: BOT }, logger });
  await gw.services.auth.users.create({ email: "u@example.test", password: PASSWORD });
  await gw.services.auth.users.create({ email: "a@example.test", password: PASSWORD, role: "admin" });
  user = await login("u@example.test");
  admin = await login("a@example.test");
});

afterAll(() => gw?.close());

async function send(method: string, path: string, headers: Record<string, string>, body?: unknown) {
  const res = await fetch(`${gw.url}${path}`, {
    method,
    headers: body === undefined ? headers : Object.assign({ "content-type": "application/json" }, headers),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = (await res.json()) as { error?: { code: string; param: string | null; message: string } };
  return { status: res.status, error: answer.error };
}

function expectLogClean() {
  for (const line of lines) {
    expect(line.length).toBeLessThanOrEqual(LINE_MAX);
    expect(line).not.toContain(MARKER);
  }
}

// Large enough that a log line quoting it is over the bound, small enough for login's body cap (16 KiB).
const hostile = (bad: string) => `${"x".repeat(12_000)}${MARKER}${bad}@example.test`;

describe("invalid text is refused at validation", () => {
  it.each([
    ["NUL", "\u0000"],
    ["a lone high surrogate", "\ud800"],
    ["a lone low surrogate", "\udc00"],
  ])("login with %s in the e-mail answers 400 naming the field", async (_name, bad) => {
    const res = await send("POST", "/api/v1/auth/login", {}, { email: hostile(bad), password: PASSWORD });
    expect(res.status).toBe(400);
    expect(res.error?.param).toBe("email");
    expect(res.error?.message).not.toContain(MARKER);
    expectLogClean();
  });

  it.each([
    ["admin: create user", "POST", "/api/v1/admin/users", "admin", { email: `x\u0000${MARKER}@example.test`, password: PASSWORD }, "email"],
    ["admin: create key (name)", "POST", "/api/v1/admin/keys", "admin", { user: "u@example.test", name: `k\ud800${MARKER}` }, "name"],
    ["admin: create key (user)", "POST", "/api/v1/admin/keys", "admin", { user: `u\u0000${MARKER}` }, "user"],
    ["support: create case", "POST", "/api/v1/user/assistant/cases", "user", { question: `why\u0000${MARKER}` }, "question"],
    [
      "support: staff reply",
      "POST",
      `/api/v1/assistant/cases/${randomUUID()}/messages`,
      "admin",
      { content: `hi\ud800${MARKER}` },
      "content",
    ],
    [
      "support: worker control",
      "POST",
      "/api/v1/internal/support/assistant/cases/chatplatform/control",
      "bot",
      { source_ref: `c\udc00${MARKER}` },
      "source_ref",
    ],
    [
      "support: chat platform snapshot (its card; message text is scrubbed instead)",
      "POST",
      "/api/v1/internal/support/assistant/cases/chatplatform",
      "bot",
      {
        source_ref: "channel-with-a-bad-card",
        card: { problem: `p\u0000${MARKER}`, facts: [], hypotheses: [], checks: [], missing: [], next_step: "", confidence: 0 },
        messages: [{ id: "m1", role: "user", content: "hi\u0000" }],
      },
      "card.problem",
    ],
    [
      "support: worker complete",
      "POST",
      `/api/v1/internal/support/assistant/jobs/${randomUUID()}/complete`,
      "bot",
      { content: `a\u0000${MARKER}` },
      "content",
    ],
    [
      "support: worker fail",
      "POST",
      `/api/v1/internal/support/assistant/jobs/${randomUUID()}/fail`,
      "bot",
      { error_code: `e\u0000${MARKER}` },
      "error_code",
    ],
  ] as const)("%s answers 400 naming the field", async (_name, method, path, who, body, param) => {
    const headers = who === "admin" ? admin : who === "user" ? user : { authorization: `Bearer ${BOT}` };
    const res = await send(method, path, headers, body);
    expect(res.status).toBe(400);
    expect(res.error?.param).toBe(param);
    expectLogClean();
  });

  it("a NUL in a path parameter or a query parameter answers 400", async () => {
    const path = await send("POST", `/api/v1/admin/keys/${MARKER}%00/revoke`, admin, {});
    expect(path.status).toBe(400);
    const query = await send("GET", `/api/v1/admin/keys?user=${MARKER}%00`, admin);
    expect(query.status).toBe(400);
    expect(query.error?.param).toBe("user");
    const cases = await send("GET", `/api/v1/assistant/cases?cursor=%00${MARKER}`, admin);
    expect(cases.status).toBe(400);
    expectLogClean();
  });
});

describe("error log lines are bounded", () => {
  it("a query error logs its class and code, never its parameters", () => {
    const captured: string[] = [];
    const log = createLogger("info", { write: (line: string) => void captured.push(line) });
    const pgError = Object.assign(new Error(`invalid byte sequence for encoding "UTF8": 0x00`), {
      code: "22021",
      detail: `Key (email)=(${MARKER}) is bad`,
    });
    const params = [`${"y".repeat(1_000_000)}${MARKER}`];
    const err = new DrizzleQueryError("select * from users where email = $1", params, pgError);
    log.error({ err }, "unhandled error");
    log.error({ err });
    log.error(err);
    log.warn({ body: { nested: { value: params[0] } }, values: params }, `upstream said ${params[0]}`);
    expect(captured).toHaveLength(4);
    for (const line of captured) {
      expect(line.length).toBeLessThanOrEqual(LINE_MAX);
      expect(line).not.toContain(MARKER);
    }
    const first = JSON.parse(captured[0]!) as { err: { type: string; cause: { code: string } } };
    expect(first.err.type).toBe("DrizzleQueryError");
    expect(first.err.cause.code).toBe("22021");
  });
});
