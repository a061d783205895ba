import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";

// Issue 20, item 6: JSON nested 10,000 levels deep answered 500 (the estimate's recursive JSON.stringify
// overflowed the stack). Nesting is capped before the parse (server.max_json_depth, 128 by default): deeper
// bodies get 400 invalid_json naming the limit, on every JSON route; a body exactly at the limit passes.

const LIMIT = 128;
const DEEP = 10_000;
const PASSWORD = "password-123";

let mock: MockUpstream;
let gw: TestGateway;
let key: string;
let admin: Record<string, string>;

beforeAll(async () => {
  mock = await startMockUpstream();
  gw = await startTestGateway({
    config: {
      // A 10,000-deep body is larger than the admin routes' default 16 KiB cap (a 413 first): lifted here.
      server: { small_body_bytes: 256 * 1024 },
      providers: { main: { protocol: "openai", base_url: `${mock.url}/v1` } },
      models: { m1: { kind: "chat", upstream: "m1", targets: ["main"] } },
    },
  });
  const { users, apiKeys } = gw.services.auth;
  await users.create({ email: "deep@example.test", password: PASSWORD, role: "admin" });
  ({ key } = await apiKeys.create({ user: "deep@example.test" }));
  const login = await fetch(`${gw.url}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: "deep@example.test", password: PASSWORD }),
  });
  const session = (await login.json()) as { token: string; csrf_token: string };
  admin = { authorization: `Bearer ${session.token}`, "x-csrf-token": session.csrf_token };
});

afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

/** JSON text of `levels` nested arrays or objects (the innermost empty). */
const nested = (levels: number, kind: "array" | "object") =>
  kind === "array" ? "[".repeat(levels) + "]".repeat(levels) : '{"a":'.repeat(levels - 1) + "{}" + "}".repeat(levels - 1);

/** Each route's body with `value` (JSON text) where a client may put any JSON, and how deep `value` starts. */
const routes = {
  chat: {
    path: "/v1/chat/completions",
    at: 5,
    body: (value: string) =>
      `{"model":"m1","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":${value}}}]}`,
  },
  messages: {
    path: "/v1/messages",
    at: 4,
    body: (value: string) =>
      `{"model":"m1","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":${value}}]}`,
  },
  generateContent: {
    path: "/compatible/v1beta/models/m1:generateContent",
    at: 6,
    body: (value: string) =>
      `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"tools":[{"functionDeclarations":[{"name":"f","parameters":${value}}]}]}`,
  },
  admin: {
    path: "/api/v1/admin/users",
    at: 2,
    body: (value: string) => `{"email":"x@example.test","password":${value}}`,
  },
} as const;

const post = (path: string, body: string) =>
  fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: path.startsWith("/api/")
      ? { ...admin, "content-type": "application/json" }
      : { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body,
  });

describe.each(Object.entries(routes))("%s", (_name, route) => {
  it.each(["array", "object"] as const)(`refuses ${DEEP}-deep %ss with 400 naming the limit`, async (kind) => {
    const res = await post(route.path, route.body(nested(DEEP, kind)));
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { code: string; message: string } };
    expect(error.code).toBe("invalid_json");
    expect(error.message).toContain(`limit of ${LIMIT} levels`);
  });

  it("takes a body nested exactly to the limit, and refuses one level more", async () => {
    // route.at is the depth of the value itself, so the body is LIMIT deep with LIMIT - at + 1 levels there.
    const atLimit = await post(route.path, route.body(nested(LIMIT - route.at + 1, "object")));
    const text = await atLimit.text();
    expect(atLimit.status, text).toBeLessThan(500);
    expect(text).not.toContain("levels");
    const over = await post(route.path, route.body(nested(LIMIT - route.at + 2, "object")));
    expect(over.status).toBe(400);
    expect(await over.text()).toContain(`limit of ${LIMIT} levels`);
  });
});

it("the chat route answers a request at the limit", async () => {
  const res = await post(routes.chat.path, routes.chat.body(nested(LIMIT - routes.chat.at + 1, "object")));
  expect(res.status).toBe(200);
});
