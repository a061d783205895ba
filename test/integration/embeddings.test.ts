import OpenAI, { BadRequestError, NotFoundError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { decodeEmbeddingBase64 } from "../../src/providers/openai/embedding-base64.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { quiesce, rowsOf } from "../helpers/metering-checks.js";
import { validateOpenAI } from "../helpers/openapi.js";

// POST /v1/embeddings through the official OpenAI SDK: float and base64 (decoded vectors equal the floats),
// the gateway encoding base64 itself when the provider answers floats only, billing on input tokens, and bad
// input.

const UPSTREAM = "mock-embed";
let mock: MockUpstream;
let proxy: FaultProxy;
let gw: TestGateway;
let client: OpenAI;
let userId: string;
let key: string;
/** The mock called directly: what the gateway's vectors must equal. */
let direct: OpenAI;

beforeAll(async () => {
  mock = await startMockUpstream();
  proxy = await startFaultProxy(mock.url);
  gw = await startTestGateway({
    config: {
      providers: {
        main: { protocol: "openai", base_url: mock.baseUrl },
        floatsOnly: { protocol: "openai", base_url: proxy.baseUrl({ "x-mock-no-base64": "1" }) },
        broken: { protocol: "openai", base_url: proxy.baseUrl({ "x-mock-status": 503 }) },
      },
      models: {
        embed: { kind: "embedding", upstream: UPSTREAM, targets: ["main"], token_multiplier: 2 },
        "embed-floats": { kind: "embedding", upstream: UPSTREAM, targets: ["floatsOnly"] },
        "embed-fallback": { kind: "embedding", upstream: UPSTREAM, targets: ["broken", "main"] },
        chatty: { kind: "chat", upstream: "mock-gpt-small", targets: ["main"] },
      },
    },
  });
  const user = await gw.services.auth.users.create({ email: "embed@example.test", password: "password-123" });
  userId = user.id;
  ({ key } = await gw.services.auth.apiKeys.create({ user: user.id }));
  client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  direct = new OpenAI({ apiKey: "unused", baseURL: mock.baseUrl, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await proxy?.close();
  await mock?.close();
});

const inputs = ["The gateway meters every request.", "Exact integers, never floats in storage."];

/** The raw answer, as the SDK would not show it (it decodes base64 itself). */
async function raw(body: Record<string, unknown>) {
  const res = await fetch(`${gw.url}/v1/embeddings`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe("POST /v1/embeddings", () => {
  it("answers floats with the public model id and bills the input tokens", async () => {
    const { data: answer, response } = await client.embeddings
      .create({ model: "embed", input: inputs, encoding_format: "float" })
      .withResponse();
    const expected = await direct.embeddings.create({ model: UPSTREAM, input: inputs, encoding_format: "float" });
    expect(answer.model).toBe("embed");
    expect(answer.data.map((d) => d.embedding)).toEqual(expected.data.map((d) => d.embedding));
    expect(answer.usage).toEqual(expected.usage);
    const { json } = await raw({ model: "embed", input: "one string" });
    expect(validateOpenAI("CreateEmbeddingResponse", json)).toEqual([]);

    await quiesce(gw);
    const [first] = await rowsOf(gw.db.pool, "select * from request_logs where user_id = $1 and request_id = $2", [
      userId,
      response.headers.get("x-request-id"),
    ]);
    // token_multiplier 2, no completion: the charge is twice the upstream's prompt tokens.
    expect(first).toMatchObject({ status: 200, usage_source: "upstream", input_tokens: expected.usage.prompt_tokens, output_tokens: 0 });
    expect(first!.quota_charged).toBe(String(2 * expected.usage.prompt_tokens));
  });

  it("answers base64 that decodes to the same vectors, passed through or encoded by the gateway", async () => {
    const floats = (await direct.embeddings.create({ model: UPSTREAM, input: inputs, encoding_format: "float" })).data.map(
      (d) => d.embedding,
    );
    for (const model of ["embed", "embed-floats"]) {
      const { status, json } = await raw({ model, input: inputs, encoding_format: "base64" });
      expect(status).toBe(200);
      const data = json.data as { embedding: unknown }[];
      for (const [i, item] of data.entries()) {
        expect(typeof item.embedding).toBe("string");
        expect(decodeEmbeddingBase64(item.embedding as string)).toEqual(floats[i]);
      }
      // The SDK decodes base64 itself (its default when no format is given).
      const sdk = await client.embeddings.create({ model, input: inputs });
      expect(sdk.data.map((d) => d.embedding)).toEqual(floats);
    }
    // What the mock sends when it does support base64 is byte-identical to the gateway's own encoding.
    const native = await raw({ model: "embed", input: inputs, encoding_format: "base64" });
    const encoded = await raw({ model: "embed-floats", input: inputs, encoding_format: "base64" });
    expect(encoded.json.data).toEqual(native.json.data);
  });

  it("falls back to the next target when the first fails", async () => {
    const asked = proxy.requests.length;
    const answer = await client.embeddings.create({ model: "embed-fallback", input: "fallback", encoding_format: "float" });
    expect(proxy.requests.slice(asked).map((r) => r.faults["x-mock-status"])).toEqual(["503"]);
    expect(answer.model).toBe("embed-fallback");
    expect(answer.data).toHaveLength(1);
  });

  it("refuses bad input with 400 naming the field, unknown models with 404, chat models with 400", async () => {
    const cases: [Record<string, unknown>, string | null][] = [
      [{ input: "x" }, "model"],
      [{ model: "embed" }, "input"],
      [{ model: "embed", input: "" }, "input"],
      [{ model: "embed", input: [] }, "input"],
      [{ model: "embed", input: ["ok", 3] }, "input"],
      [{ model: "embed", input: 42 }, "input"],
      [{ model: 7, input: "x" }, "model"],
      [{ model: "embed", input: "x", encoding_format: "int8" }, "encoding_format"],
    ];
    for (const [body, param] of cases) {
      const { status, json } = await raw(body);
      expect(status, JSON.stringify(body)).toBe(400);
      expect((json.error as { param: unknown }).param, JSON.stringify(body)).toBe(param);
    }
    await expect(client.embeddings.create({ model: "nope", input: "x" })).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.embeddings.create({ model: "chatty", input: "x" })).rejects.toBeInstanceOf(BadRequestError);
    const res = await fetch(`${gw.url}/v1/embeddings`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: "{not json",
    });
    expect(res.status).toBe(400);
  });
});
