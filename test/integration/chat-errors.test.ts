import { request } from "node:http";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { validateOpenAI } from "../helpers/openapi.js";
import { quiesce } from "../helpers/metering-checks.js";

// POST /v1/chat/completions refusals: the SDK's error classes for 401/403/404/429, bad input, the plan's
// context limit, and GET /v1/models listing exactly what a key may use. A refusal never leaves a hold behind.

const CAP = 8192;
const PASSWORD = "password-123";

let mock: MockUpstream;
let gw: TestGateway;
const keys: Record<string, string> = {};

beforeAll(async () => {
  mock = await startMockUpstream();
  const chat = (upstream: string) => ({ kind: "chat" as const, upstream, targets: ["main"] });
  gw = await startTestGateway({
    config: {
      server: { max_body_bytes: CAP },
      providers: { main: { protocol: "openai", base_url: mock.baseUrl } },
      models: {
        "gpt-pub": chat("mock-gpt-small"),
        "m-other": chat("mock-gpt-large"),
        "m-third": chat("mock-gpt-large"),
        "m-embed": { kind: "embedding", upstream: "mock-embed", targets: ["main"] },
      },
      plans: {
        free: { daily_tokens: 1_000_000, context_limit: 128_000 },
        limited: { daily_tokens: 1_000_000, context_limit: 128_000, models: ["gpt-pub", "m-third"] },
        tiny: { daily_tokens: 10, context_limit: 128_000 },
        short: { daily_tokens: 1_000_000, context_limit: 50 },
      },
    },
  });
  const { users, apiKeys } = gw.services.auth;
  for (const plan of ["free", "limited", "tiny", "short"]) {
    await users.create({ email: `${plan}@example.test`, password: PASSWORD, plan });
    keys[plan] = (await apiKeys.create({ user: `${plan}@example.test` })).key;
  }
  keys.onlyOther = (await apiKeys.create({ user: "free@example.test", models: ["m-other"] })).key;
  keys.limitedNarrow = (await apiKeys.create({ user: "limited@example.test", models: ["gpt-pub", "m-other"] })).key;
});

afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
const hello = [{ role: "user" as const, content: "hello" }];

/** The SDK call's rejection, for assertions on its class and fields. */
async function failure(call: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const err = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(OpenAI.APIError);
  return err as InstanceType<typeof OpenAI.APIError>;
}

const post = (body: string, headers: Record<string, string> = {}, key = keys.free!) =>
  fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
    body,
  });

async function expectEnvelope(res: Response, status: number) {
  expect(res.status).toBe(status);
  const body = (await res.json()) as { error: Record<string, unknown> };
  expect(validateOpenAI("ErrorResponse", body)).toEqual([]);
  expect(body.error.request_id).toBe(res.headers.get("x-request-id"));
  return body.error;
}

describe("chat completion error classes (OpenAI SDK)", () => {
  it("a wrong key is an AuthenticationError (401)", async () => {
    const err = await failure(sdk("gw_not_a_real_key_0123456789").chat.completions.create({ model: "gpt-pub", messages: hello }));
    expect(err).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(err.status).toBe(401);
  });

  it("a key restricted to other models is a PermissionDeniedError (403)", async () => {
    const err = await failure(sdk(keys.onlyOther!).chat.completions.create({ model: "gpt-pub", messages: hello }));
    expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(err.param).toBe("model");
    // The model it is restricted to works.
    const ok = await sdk(keys.onlyOther!).chat.completions.create({ model: "m-other", messages: hello });
    expect(ok.model).toBe("m-other");
  });

  it("a model outside the plan's list is a PermissionDeniedError (403)", async () => {
    const err = await failure(sdk(keys.limited!).chat.completions.create({ model: "m-other", messages: hello }));
    expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(err.status).toBe(403);
  });

  it("an unknown model is a NotFoundError (404) with code model_not_found", async () => {
    const err = await failure(sdk(keys.free!).chat.completions.create({ model: "no-such-model", messages: hello }));
    expect(err).toBeInstanceOf(OpenAI.NotFoundError);
    expect(err.code).toBe("model_not_found");
    expect(err.param).toBe("model");
  });

  it("an exhausted daily quota is a RateLimitError (429, insufficient_quota) with Retry-After", async () => {
    const err = await failure(sdk(keys.tiny!).chat.completions.create({ model: "gpt-pub", messages: hello, max_tokens: 5 }));
    expect(err).toBeInstanceOf(OpenAI.RateLimitError);
    expect(err.code).toBe("insufficient_quota");
    const retryAfter = Number(err.headers?.get("retry-after"));
    expect(Number.isInteger(retryAfter)).toBe(true);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(86_400);
  });
});

describe("chat completion bad input", () => {
  it.each([
    ["missing model", { messages: hello }, "model"],
    ["model not a string", { model: 42, messages: hello }, "model"],
    ["messages not an array", { model: "gpt-pub", messages: "hello" }, "messages"],
    ["empty messages", { model: "gpt-pub", messages: [] }, "messages"],
    ["a message without role", { model: "gpt-pub", messages: [{ content: "hi" }] }, "messages[0].role"],
    ["max_tokens negative", { model: "gpt-pub", messages: hello, max_tokens: -1 }, "max_tokens"],
    ["max_tokens zero", { model: "gpt-pub", messages: hello, max_tokens: 0 }, "max_tokens"],
    ["stream not a boolean", { model: "gpt-pub", messages: hello, stream: "yes" }, "stream"],
  ])("%s → 400 naming the field", async (_name, body, param) => {
    const error = await expectEnvelope(await post(JSON.stringify(body)), 400);
    expect(error.type).toBe("invalid_request_error");
    expect(error.param).toBe(param);
  });

  it("malformed JSON → 400 invalid_json", async () => {
    expect((await expectEnvelope(await post("{nope"), 400)).code).toBe("invalid_json");
  });

  it("a wrong content type → 415", async () => {
    const res = await post(JSON.stringify({ model: "gpt-pub", messages: hello }), { "content-type": "text/plain" });
    expect((await expectEnvelope(res, 415)).code).toBe("unsupported_media_type");
  });

  it("a body over the cap → 413", async () => {
    const body = JSON.stringify({ model: "gpt-pub", messages: [{ role: "user", content: "x".repeat(CAP * 2) }] });
    expect((await expectEnvelope(await post(body), 413)).code).toBe("request_too_large");
  });

  it("a chunked body over the cap (no Content-Length) → 413 while reading", async () => {
    const url = new URL(`${gw.url}/v1/chat/completions`);
    const res = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const headers = { authorization: `Bearer ${keys.free!}`, "content-type": "application/json", "transfer-encoding": "chunked" };
      const req = request({ host: url.hostname, port: url.port, method: "POST", path: url.pathname, headers }, (answer) => {
        let body = "";
        answer.on("data", (chunk: Buffer) => (body += chunk.toString()));
        answer.on("end", () => resolve({ status: answer.statusCode!, body }));
      });
      req.on("error", reject);
      req.write('{"model":"gpt-pub","messages":[{"role":"user","content":"');
      for (let i = 0; i < 5; i++) req.write("x".repeat(CAP / 2));
      req.end('"}]}');
    });
    expect(res.status).toBe(413);
    expect((JSON.parse(res.body) as { error: { code: string } }).error.code).toBe("request_too_large");
  });

  it("an embedding model on the chat route → 400", async () => {
    const error = await expectEnvelope(await post(JSON.stringify({ model: "m-embed", messages: hello })), 400);
    expect(error.param).toBe("model");
    expect(error.code).toBe("model_not_supported");
  });

  it("a prompt over the plan's context limit → 400 context_length_exceeded", async () => {
    const long = "The quick brown fox jumps over the lazy dog. ".repeat(20);
    const err = await failure(sdk(keys.short!).chat.completions.create({ model: "gpt-pub", messages: [{ role: "user", content: long }] }));
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.code).toBe("context_length_exceeded");
    // A short prompt on the same plan passes.
    const ok = await sdk(keys.short!).chat.completions.create({ model: "gpt-pub", messages: hello, max_tokens: 8 });
    expect(ok.choices[0]!.message.content).toMatch(/^Mock reply/);
  });

  it("the tokenizer, not the estimate, decides near the limit; far over it the estimate refuses alone", async () => {
    // 180 dashes: estimated at 64 tokens (over the limit of 50), counted as 3 by the tokenizer → admitted.
    const dashes = [{ role: "user" as const, content: "-".repeat(180) }];
    const ok = await sdk(keys.short!).chat.completions.create({ model: "gpt-pub", messages: dashes, max_tokens: 8 });
    expect(ok.choices[0]!.message.content).toMatch(/^Mock reply/);
    // 3,000 dashes: estimated at 1,004 tokens, over 3 × the limit: refused without tokenizing (the message says so).
    const err = await failure(
      sdk(keys.short!).chat.completions.create({ model: "gpt-pub", messages: [{ role: "user", content: "-".repeat(3000) }] }),
    );
    expect(err.code).toBe("context_length_exceeded");
    expect(err.message).toContain("about 1004 tokens");
  });

  it("refusals leave no hold behind and are logged with their status", async () => {
    const res = await post(JSON.stringify({ model: "no-such-model", messages: hello }));
    const requestId = res.headers.get("x-request-id")!;
    await expectEnvelope(res, 404);
    await quiesce(gw);
    const { rows } = await gw.db.pool.query("select status, error_class, quota_charged from request_logs where request_id = $1", [
      requestId,
    ]);
    expect(rows).toEqual([{ status: 404, error_class: "not_found", quota_charged: "0" }]);
    const pending = await gw.db.pool.query<{ n: string }>("select count(*) as n from quota_holds where status = 'pending'");
    expect(pending.rows[0]!.n).toBe("0");
    const debits = await gw.db.pool.query<{ p: string }>("select coalesce(sum(debits_pending), 0) as p from quota_accounts");
    expect(debits.rows[0]!.p).toBe("0");
  });
});

describe("GET /v1/models", () => {
  const ids = async (key: string) => (await sdk(key).models.list()).data.map((m) => m.id).sort();

  it("lists every model for an unrestricted key on an unrestricted plan", async () => {
    expect(await ids(keys.free!)).toEqual(["gpt-pub", "m-embed", "m-other", "m-third"]);
  });

  it("lists the key's own list", async () => {
    expect(await ids(keys.onlyOther!)).toEqual(["m-other"]);
  });

  it("lists the plan's list", async () => {
    expect(await ids(keys.limited!)).toEqual(["gpt-pub", "m-third"]);
  });

  it("lists the intersection of the plan's and the key's lists", async () => {
    expect(await ids(keys.limitedNarrow!)).toEqual(["gpt-pub"]);
    const err = await failure(sdk(keys.limitedNarrow!).chat.completions.create({ model: "m-other", messages: hello }));
    expect(err).toBeInstanceOf(OpenAI.PermissionDeniedError);
  });
});
