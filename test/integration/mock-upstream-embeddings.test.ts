import OpenAI, { RateLimitError } from "openai";
import type { CreateEmbeddingResponse } from "openai/resources/embeddings";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MockUpstream, startMockUpstream } from "../../src/mock-upstream/server.js";
import { postJson } from "../helpers/mock-upstream-client.js";
import { validateOpenAI } from "../helpers/openapi.js";

const API_KEY = "sk-mock-test";
let mock: MockUpstream;
let client: OpenAI;

beforeAll(async () => {
  mock = await startMockUpstream({ port: 0, apiKey: API_KEY });
  client = new OpenAI({ apiKey: API_KEY, baseURL: mock.baseUrl, maxRetries: 0 });
});
afterAll(async () => {
  await mock.close();
});

const post = (body: unknown, headers: Record<string, string> = {}) =>
  postJson(`${mock.baseUrl}/embeddings`, body, { authorization: `Bearer ${API_KEY}`, ...headers });

const norm = (v: number[]) => Math.hypot(...v);
const embeddings = async (res: Response) => (await res.json()) as CreateEmbeddingResponse;
/** The embeddings answered with `encoding_format: "base64"`, typed as what they are on the wire. */
const base64Embeddings = async (res: Response) => (await res.json()) as { data: { embedding: string }[] };

/** What OpenAI's base64 form means: little-endian float32 bytes. */
function decodeBase64(text: string): number[] {
  const bytes = Buffer.from(text, "base64");
  return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
}

describe("mock upstream: embeddings", () => {
  it("answers float vectors of 16 unit-length dimensions, with usage at 4 characters per token", async () => {
    const body = await embeddings(await post({ model: "mock-embed", input: "hello world", encoding_format: "float" }));
    expect(validateOpenAI("CreateEmbeddingResponse", body)).toEqual([]);
    expect(body.model).toBe("mock-embed");
    expect(body.data).toHaveLength(1);
    const vector = body.data[0]!.embedding;
    expect(vector).toHaveLength(16);
    expect(norm(vector)).toBeCloseTo(1, 6);
    // ceil(11 / 4)
    expect(body.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
  });

  it("is deterministic per input, whatever the batch, and differs by model and input", async () => {
    const request = { model: "mock-embed", input: ["alpha", "beta"], encoding_format: "float" as const };
    const [first, second] = await Promise.all([post(request), post(request)]);
    expect(await first.text()).toBe(await second.text());

    const batch = await client.embeddings.create(request);
    const alone = await client.embeddings.create({ ...request, input: "beta" });
    expect(batch.data.map((d) => d.index)).toEqual([0, 1]);
    expect(batch.data[1]!.embedding).toEqual(alone.data[0]!.embedding);
    expect(batch.data[0]!.embedding).not.toEqual(batch.data[1]!.embedding);
    // ceil(5 / 4) + ceil(4 / 4)
    expect(batch.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });

    const otherModel = await client.embeddings.create({ ...request, model: "mock-embed-2", input: "beta" });
    expect(otherModel.data[0]!.embedding).not.toEqual(alone.data[0]!.embedding);
  });

  it("encodes base64 as little-endian float32 of the very same vector (the SDK decodes it by default)", async () => {
    const float = await client.embeddings.create({ model: "mock-embed", input: "hello", encoding_format: "float" });
    // Without encoding_format the SDK asks for base64 and decodes it itself.
    const decodedBySdk = await client.embeddings.create({ model: "mock-embed", input: "hello" });
    expect(decodedBySdk.data[0]!.embedding).toEqual(float.data[0]!.embedding);

    const raw = await base64Embeddings(await post({ model: "mock-embed", input: "hello", encoding_format: "base64" }));
    expect(typeof raw.data[0]!.embedding).toBe("string");
    expect(decodeBase64(raw.data[0]!.embedding)).toEqual(float.data[0]!.embedding);
  });

  it("takes token arrays as OpenAI does: one array, or an array of them, each token costing one", async () => {
    const one = await client.embeddings.create({ model: "mock-embed", input: [1, 2, 3], encoding_format: "float" });
    expect(one.data).toHaveLength(1);
    expect(one.usage.prompt_tokens).toBe(3);
    const many = await client.embeddings.create({ model: "mock-embed", input: [[1, 2], [3]], encoding_format: "float" });
    expect(many.data).toHaveLength(2);
    expect(many.usage.prompt_tokens).toBe(3);
    expect(many.data[0]!.embedding).not.toEqual(one.data[0]!.embedding);
  });

  it("honours dimensions with the renormalised prefix of the longer vector", async () => {
    const full = await client.embeddings.create({ model: "mock-embed", input: "hello", encoding_format: "float" });
    const short = await client.embeddings.create({ model: "mock-embed", input: "hello", encoding_format: "float", dimensions: 8 });
    const prefix = full.data[0]!.embedding.slice(0, 8);
    expect(short.data[0]!.embedding).toHaveLength(8);
    short.data[0]!.embedding.forEach((x, i) => expect(x).toBeCloseTo(prefix[i]! / norm(prefix), 6));
    const long = await client.embeddings.create({ model: "mock-embed", input: "hello", encoding_format: "float", dimensions: 3072 });
    expect(long.data[0]!.embedding).toHaveLength(3072);
  });

  it.each([
    [{ model: "mock-embed", input: "" }, "input"],
    [{ model: "mock-embed", input: [] }, "input"],
    [{ model: "mock-embed" }, "input"],
    [{ model: "mock-embed", input: { text: "hi" } }, "input"],
    [{ model: "mock-embed", input: ["a", ""] }, "input.1"],
    [{ model: "mock-embed", input: ["a", 7] }, "input.1"],
    [{ model: "mock-embed", input: [1, -2] }, "input.1"],
    [{ model: "mock-embed", input: [[1], []] }, "input.1"],
    [{ model: "mock-embed", input: "hi", encoding_format: "hex" }, "encoding_format"],
    [{ model: "mock-embed", input: "hi", dimensions: 0 }, "dimensions"],
    [{ input: "hi" }, "model"],
  ])("answers %j with 400 naming %s", async (body, param) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    const error = (await res.json()) as { error: { param: string | null; type: string } };
    expect(validateOpenAI("ErrorResponse", error)).toEqual([]);
    expect(error.error.param).toBe(param);
    expect(error.error.type).toBe("invalid_request_error");
  });
});

describe("mock upstream: embeddings faults", () => {
  it("x-mock-no-base64 answers float arrays even when base64 is asked for", async () => {
    const float = await embeddings(await post({ model: "mock-embed", input: "hello", encoding_format: "float" }));
    const res = await post({ model: "mock-embed", input: "hello", encoding_format: "base64" }, { "x-mock-no-base64": "1" });
    const body = await embeddings(res);
    expect(validateOpenAI("CreateEmbeddingResponse", body)).toEqual([]);
    expect(body.data[0]!.embedding).toEqual(float.data[0]!.embedding);
  });

  it("x-mock-status answers an OpenAI-shaped error with the retry hints", async () => {
    const err = await client.embeddings
      .create(
        { model: "mock-embed", input: "hi" },
        { headers: { "x-mock-status": "429", "x-mock-retry-after": "3", "x-mock-retry-after-ms": "2500" } },
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RateLimitError);
    const rateLimited = err as RateLimitError;
    expect(rateLimited.headers.get("retry-after")).toBe("3");
    expect(rateLimited.headers.get("retry-after-ms")).toBe("2500");
    expect(validateOpenAI("ErrorResponse", { error: rateLimited.error })).toEqual([]);
  });

  it("x-mock-omit-usage leaves usage out; x-mock-delay-ms still answers in full", async () => {
    const omitted = await embeddings(await post({ model: "mock-embed", input: "hi" }, { "x-mock-omit-usage": "1" }));
    expect(omitted).not.toHaveProperty("usage");
    expect(omitted.data).toHaveLength(1);
    const delayed = await post({ model: "mock-embed", input: "hi" }, { "x-mock-delay-ms": "20" });
    expect(delayed.status).toBe(200);
  });
});
