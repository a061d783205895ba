import Anthropic from "@anthropic-ai/sdk";
import { ApiError, GoogleGenAI, type Model as GeminiModel } from "@google/genai";
import OpenAI from "openai";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { createLogger } from "../../src/logger.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { quiesce, rowsOf } from "../helpers/metering-checks.js";

// The model-discovery calls of the official SDKs, unmodified (docs/api.md, "Model discovery"): OpenAI
// models.list/retrieve, Anthropic models.list/retrieve (Anthropic's shape on the same paths, chosen by the
// anthropic-version header the SDK sends), Gemini models.list/get under /compatible (paged), and the Gemini
// routes' `?key=`, which no log line or request-log row may hold. Only the models a key may use are listed; a
// model the key may not use answers retrieve as an unknown one does.

const MOCK_KEY = "mock-upstream-key";
const CHAT_IDS = ["alpha", "org/beta", "gamma", "delta", "epsilon"];

let mock: MockUpstream;
let gw: TestGateway;
const logLines: string[] = [];
let key: string;
/** A key restricted (`--models`) to alpha and the embedding model. */
let restricted: string;

beforeAll(async () => {
  mock = await startMockUpstream({ apiKey: MOCK_KEY });
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(...chunk.toString().split("\n").filter(Boolean));
      done();
    },
  });
  const chat = (upstream: string, target: string) => ({ kind: "chat" as const, upstream, targets: [target] });
  gw = await startTestGateway({
    logger: createLogger("debug", sink),
    config: {
      providers: {
        openai: { protocol: "openai", base_url: mock.baseUrl, api_key: MOCK_KEY },
        gemini: { protocol: "gemini", base_url: mock.url, api_key: MOCK_KEY },
      },
      models: {
        ...Object.fromEntries(CHAT_IDS.map((id) => [id, chat("mock-gpt-small", "openai")])),
        "gemini-native": Object.assign(chat("mock-gemini", "gemini"), { description: "Answers natively.", release_date: "2025-03-01" }),
        embed: { kind: "embedding", upstream: "mock-embed", targets: ["openai"] },
      },
      plans: { free: { daily_tokens: 1_000_000, context_limit: 64_000 } },
    },
  });
  const { users, apiKeys } = gw.services.auth;
  const user = await users.create({ email: "discovery@example.test", password: "password-123", plan: "free" });
  key = (await apiKeys.create({ user: user.id })).key;
  restricted = (await apiKeys.create({ user: user.id, models: ["alpha", "embed"] })).key;
});

afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

const ALL_CHAT = [...CHAT_IDS, "gemini-native"];

describe("OpenAI SDK", () => {
  const openai = (apiKey: string) => new OpenAI({ apiKey, baseURL: `${gw.url}/v1`, maxRetries: 0 });

  it("retrieves a model by an ID with a slash, as the list shows it", async () => {
    const listed = [];
    for await (const model of openai(key).models.list()) listed.push(model);
    expect(listed.map((m) => m.id)).toEqual([...ALL_CHAT, "embed"]);
    const model = await openai(key).models.retrieve("org/beta");
    expect(model).toEqual(listed.find((m) => m.id === "org/beta"));
    expect(model).toMatchObject({ id: "org/beta", object: "model", owned_by: "gateway" });
  });

  it("a model the key may not use is as unknown as one that does not exist", async () => {
    const client = openai(restricted);
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(["alpha", "embed"]);
    expect((await client.models.retrieve("alpha")).id).toBe("alpha");
    const forbidden = await client.models.retrieve("gamma").catch((err: unknown) => err);
    const unknown = await client.models.retrieve("no-such-model").catch((err: unknown) => err);
    expect(forbidden).toBeInstanceOf(OpenAI.NotFoundError);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect((forbidden as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("model_not_found");
    expect((unknown as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("model_not_found");
  });
});

describe("Anthropic SDK", () => {
  const anthropic = (apiKey: string) => new Anthropic({ apiKey, baseURL: gw.url, maxRetries: 0 });

  it("lists the chat models in Anthropic's shape, page after page", async () => {
    const pages = [];
    let page = await anthropic(key).models.list({ limit: 2 });
    pages.push(page.data.map((m) => m.id));
    expect(page.data[0]).toEqual({
      type: "model",
      id: "alpha",
      display_name: "alpha",
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/),
      capabilities: null,
      max_input_tokens: 64_000,
      max_tokens: null,
    });
    while (page.hasNextPage()) {
      page = await page.getNextPage();
      pages.push(page.data.map((m) => m.id));
    }
    expect(pages).toEqual([
      ["alpha", "org/beta"],
      ["gamma", "delta"],
      ["epsilon", "gemini-native"],
    ]);
    const all = [];
    for await (const model of anthropic(key).models.list()) all.push(model.id);
    expect(all).toEqual(ALL_CHAT);
  });

  it("pages backwards with before_id, and says where a page starts and ends", async () => {
    const res = await fetch(`${gw.url}/v1/models?limit=2&before_id=delta`, {
      headers: { "x-api-key": key, "anthropic-version": "2023-06-01" },
    });
    expect(await res.json()).toMatchObject({ has_more: true, first_id: "org/beta", last_id: "gamma" });
  });

  it("retrieves a model; created_at is the OpenAI list's created", async () => {
    const model = await anthropic(key).models.retrieve("gemini-native");
    expect(model).toMatchObject({ type: "model", id: "gemini-native", created_at: "2025-03-01T00:00:00Z" });
    const openaiShape = (await (
      await fetch(`${gw.url}/v1/models/gemini-native`, { headers: { authorization: `Bearer ${key}` } })
    ).json()) as {
      created: number;
    };
    expect(new Date(model.created_at).getTime() / 1000).toBe(openaiShape.created);
  });

  it("a model the key may not use, and a model Anthropic clients cannot call, are not found", async () => {
    for (const [apiKey, id] of [
      [restricted, "gamma"],
      [key, "embed"],
      [key, "no-such-model"],
    ] as const) {
      const err = await anthropic(apiKey)
        .models.retrieve(id)
        .catch((e: unknown) => e);
      expect(err, id).toBeInstanceOf(Anthropic.NotFoundError);
    }
    const listed = [];
    for await (const model of anthropic(restricted).models.list()) listed.push(model.id);
    expect(listed).toEqual(["alpha"]);
  });
});

describe("Gemini SDK", () => {
  const gemini = (apiKey: string) => new GoogleGenAI({ apiKey, httpOptions: { baseUrl: `${gw.url}/compatible`, apiVersion: "v1beta" } });

  it("lists the chat models in Gemini's shape, paged by pageToken", async () => {
    const pager = await gemini(key).models.list({ config: { pageSize: 4 } });
    expect(pager.page.map((m) => m.name)).toEqual(["models/alpha", "models/org/beta", "models/gamma", "models/delta"]);
    const names: string[] = [];
    for await (const model of pager) names.push(model.name!);
    expect(names).toEqual(ALL_CHAT.map((id) => `models/${id}`));
  });

  it("gets a model by an ID with a slash, with the methods served for it", async () => {
    const model: GeminiModel = await gemini(key).models.get({ model: "org/beta" });
    expect(model).toMatchObject({
      name: "models/org/beta",
      displayName: "org/beta",
      version: "1",
      inputTokenLimit: 64_000,
      supportedActions: ["generateContent", "streamGenerateContent"],
    });
    const native = await gemini(key).models.get({ model: "models/gemini-native" });
    expect(native).toMatchObject({ description: "Answers natively.", version: "2025-03-01" });
  });

  it("a model the key may not use is as unknown as one that does not exist", async () => {
    for (const [apiKey, id] of [
      [restricted, "gamma"],
      [key, "embed"],
      [key, "no-such-model"],
    ] as const) {
      const err = await gemini(apiKey)
        .models.get({ model: id })
        .catch((e: unknown) => e);
      expect(err, id).toBeInstanceOf(ApiError);
      expect((err as ApiError).status, id).toBe(404);
    }
  });

  it("refuses a pageToken that names no model of the list", async () => {
    const res = await fetch(`${gw.url}/compatible/v1beta/models?pageToken=bm9wZQ`, { headers: { "x-goog-api-key": key } });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("invalid_cursor");
  });
});

describe("?key= on the Gemini routes", () => {
  it("authenticates list, get and generateContent, and no log line or request-log row holds the key", async () => {
    const base = `${gw.url}/compatible/v1beta/models`;
    const query = `key=${encodeURIComponent(key)}`;
    const list = await fetch(`${base}?${query}`);
    expect(list.status).toBe(200);
    expect((await fetch(`${base}/org/beta?${query}`)).status).toBe(200);
    const generated = await fetch(`${base}/gemini-native:generateContent?${query}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ contents: [{ role: "user", parts: [{ text: "hello" }] }] }),
    });
    expect(generated.status).toBe(200);
    const unknownRoute = await fetch(`${base}/gemini-native:countTokens?${query}`, { method: "POST", body: "{}" });
    expect(unknownRoute.status).toBe(404);
    const wrongKey = await fetch(`${base}?key=gw_not-a-key`);
    expect(wrongKey.status).toBe(401);

    await quiesce(gw);
    const rows = await rowsOf(gw.db.pool, "select * from request_logs where request_id = $1", [generated.headers.get("x-request-id")]);
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain(key);
    const lines = logLines.filter(
      (l) => l.includes(generated.headers.get("x-request-id")!) || l.includes(list.headers.get("x-request-id")!),
    );
    expect(lines.length).toBeGreaterThanOrEqual(2);
    for (const line of logLines) expect(line).not.toContain(key);
    for (const line of logLines) expect(line).not.toContain("gw_not-a-key");
  });

  it("is not taken on the other surfaces", async () => {
    expect((await fetch(`${gw.url}/v1/models?key=${encodeURIComponent(key)}`)).status).toBe(401);
  });
});
