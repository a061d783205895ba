import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { encodeRow } from "../../src/analytics/row-json.js";
import type { RequestLogRow } from "../../src/analytics/types.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { quiesce } from "../helpers/metering-checks.js";
import { evaluation } from "../helpers/systemone.js";

// Issue 20, item 4: a model name (any identifier) is bounded at validation, before anything is logged, on every
// inference route, also for a key whose day is overdrawn; and the request log bounds every text column it writes.

const MARKER = "unbounded-model-5d2e";
const BOUND = 256;
/** 1 MiB in a body; in a path, as much as the request line may carry. */
const bodyModel = `${MARKER}${"m".repeat(1024 * 1024)}`;
const pathModel = `${MARKER}${"m".repeat(8_000)}`;
/** For a route of small bodies (server.small_body_bytes, 16 KiB): past the identifier bound, inside the body cap. */
const smallBodyModel = `${MARKER}${"m".repeat(12_000)}`;

let gw: TestGateway;
let key: string;
let userId: string;

beforeAll(async () => {
  gw = await startTestGateway({
    config: {
      // A day of nothing: the key is overdrawn from its first request.
      plans: { free: { daily_tokens: 0, weekly_resets: 1, context_limit: 128_000 } },
      models: {
        m1: { kind: "chat", upstream: "m1", targets: ["main"] },
        e1: { kind: "embedding", upstream: "e1", targets: ["main"] },
      },
    },
  });
  const user = await gw.services.auth.users.create({ email: "u@example.test", password: "password-123" });
  userId = user.id;
  key = (await gw.services.auth.apiKeys.create({ user: "u@example.test" })).key;
});

afterAll(() => gw?.close());

const messages = [{ role: "user", content: "hi" }];

const routes: [string, string, unknown][] = [
  ["chat", "/v1/chat/completions", { model: bodyModel, messages }],
  ["responses", "/v1/responses", { model: bodyModel, input: "hi" }],
  ["embeddings", "/v1/embeddings", { model: bodyModel, input: "hi" }],
  ["messages", "/v1/messages", { model: bodyModel, max_tokens: 16, messages }],
  ["messages (SDK root)", "/messages", { model: bodyModel, max_tokens: 16, messages }],
  ["images", "/v1/images/generations", { model: bodyModel, prompt: "a cat" }],
  ["video", "/v1/video/generations", { model: bodyModel, prompt: "a cat" }],
  ["evaluation", "/v1/systemone", evaluation(bodyModel)],
  ["evaluation (native)", "/native/v1/systemone", evaluation(bodyModel)],
  ["embed tokens", "/v1/embed/tokens", { model: smallBodyModel }],
  ["generateContent", `/compatible/v1beta/models/${pathModel}:generateContent`, { contents: [{ parts: [{ text: "hi" }] }] }],
];

async function storedRows() {
  await quiesce(gw);
  const { rows } = await gw.db.pool.query<{ row: string }>("select row_to_json(r)::text as row from request_logs r where user_id = $1", [
    userId,
  ]);
  return rows.map((r) => r.row);
}

describe("identifiers are bounded before anything is stored", () => {
  it.each(routes)("%s: a huge model is refused and its row holds none of it", async (_name, path, body) => {
    const res = await fetch(`${gw.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect([400, 422]).toContain(res.status);
    const answer = (await res.json()) as { error?: { param: string | null } };
    expect(answer.error?.param).toBe("model");
    for (const row of await storedRows()) {
      expect(row.length).toBeLessThan(4096);
      expect(row).not.toContain(MARKER);
    }
  });

  it("GET /embed/image:{model} refuses a huge model in the path", async () => {
    const res = await fetch(`${gw.url}/embed/image:${pathModel}?prompt=cat`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(400);
    for (const row of await storedRows()) expect(row).not.toContain(MARKER);
  });

  it("a model of 256 characters is still a model (unknown here: 404, not 400)", async () => {
    const res = await fetch(`${gw.url}/v1/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "n".repeat(BOUND), messages }),
    });
    expect(res.status).not.toBe(400);
  });
});

describe("the request log bounds every text column it writes", () => {
  it("cuts a row's text at the writer", () => {
    const long = `${MARKER}${"z".repeat(100_000)}`;
    const row: RequestLogRow = {
      requestId: "req_1",
      userId: randomUUID(),
      keyId: null,
      route: long,
      clientProtocol: long,
      publicModel: long,
      upstreamModel: long,
      provider: long,
      fallbackPath: Array.from({ length: 1000 }, () => long),
      status: 400,
      errorClass: null,
      errorCode: null,
      inputTokens: 0,
      outputTokens: 0,
      cachedTokens: 0,
      quotaCharged: 0n,
      costUsd: null,
      upstreamCostUsd: null,
      usageSource: "none",
      gptImageUsageFallback: null,
      latencyMs: 1,
      ttfbMs: null,
      streamed: false,
      receivedAt: new Date(),
      createdAt: new Date(),
    };
    const encoded = JSON.parse(encodeRow(row)!) as Record<string, unknown>;
    for (const column of ["route", "client_protocol", "public_model", "upstream_model", "provider"]) {
      expect((encoded[column] as string).length).toBeLessThanOrEqual(BOUND);
    }
    const path = encoded.fallback_path as string[];
    expect(path.length).toBeLessThanOrEqual(16);
    for (const entry of path) expect(entry.length).toBeLessThanOrEqual(BOUND);
  });
});
