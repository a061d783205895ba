import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiOperations } from "../../src/runtime/routes.js";
import type { OperationDescription } from "../../src/openapi/operation.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";

// Who may call the support workspace, for every route the API description lists under it: the user side takes
// a session only (an API key is 401), the staff side an admin session with its CSRF token on every POST (a user
// session is 403, a missing token 403), the workers' side the bot token only (401 otherwise). Read from the
// description, so a route added there is checked here without a line of this file changing.

const PASSWORD = "password-123";
const BOT = "bot-token-for-the-access-grid-0123456789";

let gw: TestGateway;
let userToken: string;
let admin: { token: string; csrf: string };
let apiKey: string;

const support = apiOperations().filter((op) => /^\/api\/v1\/(user\/assistant|assistant|internal\/support)\//.test(op.path));

beforeAll(async () => {
  gw = await startTestGateway({ env: { SUPPORT_BOT_TOKEN: BOT } });
  await gw.services.auth.users.create({ email: "u@example.test", password: PASSWORD });
  await gw.services.auth.users.create({ email: "a@example.test", password: PASSWORD, role: "admin" });
  userToken = (await logIn(gw.url, "u@example.test", PASSWORD)).token;
  const a = await logIn(gw.url, "a@example.test", PASSWORD);
  admin = { token: a.token, csrf: a.csrfToken };
  apiKey = (await gw.services.auth.apiKeys.create({ user: "u@example.test" })).key;
});

afterAll(() => gw?.close());

/** The operation's path with a fresh id in every parameter. */
const pathOf = (op: OperationDescription) => op.path.replace(/\{[^}]+\}/g, () => randomUUID());

async function call(op: OperationDescription, headers: Record<string, string>) {
  const res = await fetch(`${gw.url}${pathOf(op)}`, {
    method: op.method.toUpperCase(),
    headers: op.method === "get" ? headers : Object.assign({ "content-type": "application/json" }, headers),
    body: op.method === "get" ? undefined : "{}",
  });
  const body = (await res.json()) as { error?: { code: string } };
  return { status: res.status, code: body.error?.code };
}

describe("the support workspace's access grid", () => {
  it("covers the three sides", () => {
    expect(support.filter((op) => op.access === "session").length).toBeGreaterThanOrEqual(5);
    expect(support.filter((op) => op.access === "admin").length).toBeGreaterThanOrEqual(5);
    expect(support.filter((op) => op.access === "bot").length).toBeGreaterThanOrEqual(3);
  });

  it.each(support.map((op) => [`${op.method.toUpperCase()} ${op.path}`, op] as const))(
    "%s refuses every other credential",
    async (_name, op) => {
      const others: Record<string, string>[] = [
        {},
        { authorization: `Bearer ${apiKey}` },
        { authorization: `Bearer ${BOT}` },
        { authorization: `Bearer ${userToken}` },
        { authorization: `Bearer ${admin.token}`, "x-csrf-token": admin.csrf },
      ];
      const allowed = (h: Record<string, string>) =>
        (op.access === "session" && h.authorization === `Bearer ${userToken}`) ||
        (op.access === "admin" && h.authorization === `Bearer ${admin.token}`) ||
        (op.access === "bot" && h.authorization === `Bearer ${BOT}`) ||
        // An admin is a user too: the user side takes any session.
        (op.access === "session" && h.authorization === `Bearer ${admin.token}`);
      for (const headers of others.filter((h) => !allowed(h))) {
        const { status } = await call(op, headers);
        expect([401, 403], `${JSON.stringify(Object.keys(headers))} → ${status}`).toContain(status);
      }
      if (op.access === "admin" && op.method !== "get") {
        const { status, code } = await call(op, { authorization: `Bearer ${admin.token}` });
        expect({ status, code }).toEqual({ status: 403, code: "csrf_failed" });
      }
      if (op.access === "session" && op.path.includes("{id}")) {
        // Someone else's (here: nobody's) case is 404, never 403: no existence oracle.
        const { status } = await call(op, { authorization: `Bearer ${userToken}` });
        expect([400, 404]).toContain(status);
      }
    },
  );
});
