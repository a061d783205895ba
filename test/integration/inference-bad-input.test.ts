import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { quiesce, rowsOf } from "../helpers/metering-checks.js";
import { validateOpenAI } from "../helpers/openapi.js";

// Bad input on every inference route, one table: missing model, wrong types, unknown model, a model of the
// wrong kind, empty input, malformed JSON, another content type, an oversize body. Each is refused with its
// status in the gateway's envelope naming the field, logged, and holds nothing.

const CAP = 8192;
let mock: MockUpstream;
let gw: TestGateway;
let key: string;
let userId: string;

beforeAll(async () => {
  mock = await startMockUpstream();
  gw = await startTestGateway({
    config: {
      server: { max_body_bytes: CAP },
      providers: {
        chat: { protocol: "openai", base_url: mock.baseUrl },
        claude: { protocol: "anthropic", base_url: mock.url },
        gemini: { protocol: "gemini", base_url: mock.url },
      },
      models: {
        gpt: { kind: "chat", upstream: "mock-gpt-small", targets: ["chat"] },
        claude: { kind: "chat", upstream: "mock-claude", targets: ["claude"] },
        gem: { kind: "chat", upstream: "mock-gemini", targets: ["gemini"] },
        embed: { kind: "embedding", upstream: "mock-embed", targets: ["chat"] },
      },
    },
  });
  const user = await gw.services.auth.users.create({ email: "bad-input@example.test", password: "password-123" });
  userId = user.id;
  ({ key } = await gw.services.auth.apiKeys.create({ user: user.id }));
});

afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

interface Route {
  name: string;
  /** The path for a model (Gemini's model is in the path). */
  path: (model: string) => string;
  /** A valid body for a model. */
  body: (model: string) => Record<string, unknown>;
  /** A chat model this route serves. */
  model: string;
  /** A model of the wrong kind for the route. */
  wrongKind: string;
  missingModel: { path?: string; body?: Record<string, unknown> };
  wrongTypes: [Record<string, unknown>, string][];
  empty: [Record<string, unknown>, string][];
}

const text = "Say hello";
const gemini = (method: string) => (model: string) => `/compatible/v1beta/models/${model}:${method}`;
const contents = [{ role: "user", parts: [{ text }] }];

const routes: Route[] = [
  {
    name: "chat completions",
    path: () => "/v1/chat/completions",
    body: (model) => ({ model, messages: [{ role: "user", content: text }] }),
    model: "gpt",
    wrongKind: "embed",
    missingModel: { body: { messages: [{ role: "user", content: text }] } },
    wrongTypes: [
      [{ model: 42 }, "model"],
      [{ messages: "hello" }, "messages"],
      [{ stream: "yes" }, "stream"],
    ],
    empty: [[{ messages: [] }, "messages"]],
  },
  {
    name: "responses",
    path: () => "/v1/responses",
    body: (model) => ({ model, input: text }),
    model: "gpt",
    wrongKind: "embed",
    missingModel: { body: { input: text } },
    wrongTypes: [
      [{ model: ["gpt"] }, "model"],
      [{ max_output_tokens: "many" }, "max_output_tokens"],
    ],
    empty: [
      [{ input: "" }, "input"],
      [{ input: null }, "input"],
    ],
  },
  {
    name: "embeddings",
    path: () => "/v1/embeddings",
    body: (model) => ({ model, input: text }),
    model: "embed",
    wrongKind: "gpt",
    missingModel: { body: { input: text } },
    wrongTypes: [
      [{ input: 42 }, "input"],
      [{ encoding_format: "int8" }, "encoding_format"],
    ],
    empty: [
      [{ input: "" }, "input"],
      [{ input: [] }, "input"],
    ],
  },
  {
    name: "messages",
    path: () => "/v1/messages",
    body: (model) => ({ model, max_tokens: 50, messages: [{ role: "user", content: text }] }),
    model: "claude",
    wrongKind: "embed",
    missingModel: { body: { max_tokens: 50, messages: [{ role: "user", content: text }] } },
    wrongTypes: [
      [{ model: 7 }, "model"],
      [{ max_tokens: "50" }, "max_tokens"],
      [{ messages: [{ role: "system", content: text }] }, "messages[0].role"],
      [{ system: 3 }, "system"],
    ],
    empty: [
      [{ messages: [] }, "messages"],
      [{ messages: [{ role: "user", content: [{ type: "text" }] }] }, "messages[0].content[0].text"],
    ],
  },
  ...["generateContent", "streamGenerateContent?alt=sse"].map((method): Route => ({
    name: method,
    path: gemini(method),
    body: () => ({ contents }),
    model: "gem",
    wrongKind: "embed",
    missingModel: { path: gemini(method)("") },
    wrongTypes: [
      [{ contents: "hello" }, "contents"],
      [{ generationConfig: { maxOutputTokens: "many" } }, "generationConfig.maxOutputTokens"],
    ],
    empty: [
      [{ contents: [] }, "contents"],
      [{ contents: [{ role: "user", parts: [] }] }, "contents[0].parts"],
    ],
  })),
];

async function post(path: string, body: string, contentType = "application/json") {
  const res = await fetch(`${gw.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": contentType },
    body,
  });
  const json = (await res.json()) as { error: Record<string, unknown> };
  expect(validateOpenAI("ErrorResponse", json)).toEqual([]);
  expect(json.error.request_id).toBe(res.headers.get("x-request-id"));
  return { status: res.status, error: json.error };
}

describe.each(routes)("bad input on $name", (route) => {
  const send = (body: Record<string, unknown>, path = route.path(route.model)) => post(path, JSON.stringify(body));

  it("missing model → 400 naming model", async () => {
    const res = await send(route.missingModel.body ?? route.body(route.model), route.missingModel.path);
    expect(res).toMatchObject({ status: 400, error: { type: "invalid_request_error", param: "model" } });
  });

  it("wrong types → 400 naming the field", async () => {
    for (const [change, param] of route.wrongTypes) {
      expect(await send({ ...route.body(route.model), ...change }), param).toMatchObject({ status: 400, error: { param } });
    }
  });

  it("empty input → 400 naming the field", async () => {
    for (const [change, param] of route.empty) {
      expect(await send({ ...route.body(route.model), ...change }), param).toMatchObject({ status: 400, error: { param } });
    }
  });

  it("unknown model → 404, a model of the wrong kind → 400", async () => {
    expect(await send(route.body("no-such-model"), route.path("no-such-model"))).toMatchObject({
      status: 404,
      error: { code: "model_not_found" },
    });
    expect(await send(route.body(route.wrongKind), route.path(route.wrongKind))).toMatchObject({
      status: 400,
      error: { code: "model_not_supported", param: "model" },
    });
  });

  it("the request log keeps the model a refused request named, and only a name", async () => {
    const [change] = route.empty[0]!;
    const named = await send({ ...route.body(route.model), ...change });
    const malformed = await post(route.path(route.model), "{nope");
    // A body that names its model in the body may name something that is no name: nothing of it is kept.
    const notAName = route.missingModel.body ? await send({ ...route.body(route.model), model: { pasted: "x".repeat(300) } }) : null;
    expect([named.status, malformed.status, notAName?.status ?? 400]).toEqual([400, 400, 400]);
    await quiesce(gw);
    const modelOf = async (res: { error: Record<string, unknown> }) =>
      (await rowsOf(gw.db.pool, "select public_model from request_logs where request_id = $1", [res.error.request_id]))[0]?.public_model;
    expect(await modelOf(named)).toBe(route.model);
    // Gemini names the model in the path, which a malformed body does not hide.
    expect(await modelOf(malformed)).toBe(route.missingModel.body ? "" : route.model);
    if (notAName) expect(await modelOf(notAName)).toBe("");
  });

  it("malformed JSON → 400, another content type → 415, an oversize body → 413", async () => {
    const path = route.path(route.model);
    expect(await post(path, "{nope")).toMatchObject({ status: 400, error: { code: "invalid_json" } });
    expect(await post(path, JSON.stringify(route.body(route.model)), "text/plain")).toMatchObject({ status: 415 });
    const big = JSON.stringify({ ...route.body(route.model), padding: "x".repeat(CAP * 2) });
    expect(await post(path, big)).toMatchObject({ status: 413, error: { code: "request_too_large" } });
  });
});

it("another method on the new routes → 405 naming POST", async () => {
  for (const path of [
    "/messages",
    "/v1/messages",
    "/compatible/v1beta/models/gem:generateContent",
    "/compatible/v1beta/models/org/gem:streamGenerateContent",
  ]) {
    const res = await fetch(`${gw.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status, path).toBe(405);
    expect(res.headers.get("allow")).toBe("POST");
  }
});

it("no refusal leaves a hold behind; each is in the request log", async () => {
  await quiesce(gw);
  const [account] = await rowsOf(gw.db.pool, "select coalesce(sum(debits_pending), 0) as pending from quota_accounts where user_id = $1", [
    userId,
  ]);
  expect(account!.pending).toBe("0");
  const holds = await rowsOf(gw.db.pool, "select count(*)::int as n from quota_holds", []);
  expect(holds[0]!.n).toBe(0);
  const logged = await rowsOf(gw.db.pool, "select route, status from request_logs where user_id = $1 and status = 400", [userId]);
  expect(new Set(logged.map((r) => r.route))).toEqual(
    new Set([
      "/v1/chat/completions",
      "/v1/responses",
      "/v1/embeddings",
      "/messages",
      "/compatible/v1beta/models/{model}:generateContent",
      "/compatible/v1beta/models/{model}:streamGenerateContent",
    ]),
  );
});
