import OpenAI from "openai";
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { collect } from "../helpers/async-iter.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { validateOpenAI } from "../helpers/openapi.js";
import { quiesce } from "../helpers/metering-checks.js";

// POST /v1/chat/completions through the official OpenAI SDK: JSON, streams, tool calls, and what the
// gateway changes on the way (public model id, the usage chunk it asked for, its overhead header).

const PUBLIC = "gpt-pub";
const UPSTREAM = "mock-gpt-small";

let mock: MockUpstream;
let gw: TestGateway;
let client: OpenAI;
/** The mock upstream called directly with the upstream model: what the gateway's answers must match. */
let direct: OpenAI;

beforeAll(async () => {
  mock = await startMockUpstream();
  gw = await startTestGateway({
    config: {
      providers: { main: { protocol: "openai", base_url: mock.baseUrl } },
      models: { [PUBLIC]: { kind: "chat", upstream: UPSTREAM, targets: ["main"] } },
    },
  });
  await gw.services.auth.users.create({ email: "sdk@example.test", password: "password-123" });
  const { key } = await gw.services.auth.apiKeys.create({ user: "sdk@example.test" });
  client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  direct = new OpenAI({ apiKey: "unused", baseURL: mock.baseUrl, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await mock?.close();
});

const messages: ChatCompletionMessageParam[] = [
  { role: "system", content: "You are terse." },
  { role: "user", content: "Say hello to the gateway tests" },
];

const weatherTool: ChatCompletionTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Current weather for a city",
    parameters: { type: "object", properties: { location: { type: "string" } }, required: ["location"] },
  },
};

function expectValidChunks(chunks: ChatCompletionChunk[]) {
  expect(chunks.length).toBeGreaterThan(2);
  for (const chunk of chunks) {
    expect(validateOpenAI("CreateChatCompletionStreamResponse", chunk)).toEqual([]);
    expect(chunk.model).toBe(PUBLIC);
  }
}

const contentOf = (chunks: ChatCompletionChunk[]) => chunks.map((c) => c.choices[0]?.delta.content ?? "").join("");

const settled = () => quiesce(gw);

async function logRow(requestId: string) {
  const { rows } = await gw.db.pool.query<Record<string, unknown>>("select * from request_logs where request_id = $1", [requestId]);
  return rows[0];
}

async function pendingDebits(): Promise<string[]> {
  const { rows } = await gw.db.pool.query<{ debits_pending: string }>("select debits_pending from quota_accounts");
  return rows.map((r) => String(r.debits_pending));
}

describe("chat completions through the OpenAI SDK", () => {
  it("answers JSON with the public model id, the upstream's deterministic content, usage and the overhead header", async () => {
    const { data, response } = await client.chat.completions.create({ model: PUBLIC, messages }).withResponse();
    expect(response.status).toBe(200);
    expect(validateOpenAI("CreateChatCompletionResponse", data)).toEqual([]);
    expect(data.model).toBe(PUBLIC);

    const expected = await direct.chat.completions.create({ model: UPSTREAM, messages });
    expect(data.choices[0]!.message.content).toBe(expected.choices[0]!.message.content);
    expect(data.choices[0]!.finish_reason).toBe(expected.choices[0]!.finish_reason);
    expect(data.usage).toEqual(expected.usage);

    const overhead = response.headers.get("x-gateway-overhead-ms");
    expect(overhead).toMatch(/^\d+(\.\d+)?$/);
    expect(Number.isFinite(Number(overhead))).toBe(true);

    const requestId = response.headers.get("x-request-id")!;
    await settled();
    const row = await logRow(requestId);
    expect(row).toMatchObject({ status: 200, public_model: PUBLIC, upstream_model: UPSTREAM, provider: "main", usage_source: "upstream" });
    expect(row!.fallback_path).toEqual([]);
    expect(row!.input_tokens).toBe(data.usage!.prompt_tokens);
    expect(row!.output_tokens).toBe(data.usage!.completion_tokens);
    expect(await pendingDebits()).toEqual(["0"]);
  });

  it("streams deltas that concatenate to the JSON answer; without include_usage no chunk has a usage key", async () => {
    const json = await client.chat.completions.create({ model: PUBLIC, messages });
    const { data: stream, response } = await client.chat.completions.create({ model: PUBLIC, messages, stream: true }).withResponse();
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(response.headers.get("x-gateway-overhead-ms")).toMatch(/^\d+(\.\d+)?$/);
    const chunks = await collect(stream);
    expectValidChunks(chunks);
    expect(contentOf(chunks)).toBe(json.choices[0]!.message.content);
    // The gateway asked upstream for usage (to bill it) and must strip every trace of it.
    for (const chunk of chunks) expect(Object.keys(chunk)).not.toContain("usage");
    expect(chunks.every((c) => c.choices.length === 1)).toBe(true);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe(json.choices[0]!.finish_reason);

    // The request was still billed from upstream usage, not a local count.
    await settled();
    const row = await logRow(response.headers.get("x-request-id")!);
    expect(row).toMatchObject({ status: 200, streamed: true, usage_source: "upstream", provider: "main" });
    expect(row!.input_tokens).toBe(json.usage!.prompt_tokens);
    expect(row!.output_tokens).toBe(json.usage!.completion_tokens);
  });

  it("streams with include_usage: the last chunk has usage, the charge, and no choices", async () => {
    const { data: json, response } = await client.chat.completions.create({ model: PUBLIC, messages }).withResponse();
    // A JSON answer names its committed charge in a header; a stream in its usage chunk.
    const charge = Number(response.headers.get("x-gateway-charge"));
    expect(charge).toBeGreaterThan(0);
    const chunks = await collect(
      await client.chat.completions.create({ model: PUBLIC, messages, stream: true, stream_options: { include_usage: true } }),
    );
    expectValidChunks(chunks);
    const last = chunks.at(-1)!;
    expect(last.choices).toEqual([]);
    expect(last.usage).toEqual({ ...json.usage, gateway_charge: charge });
    expect(contentOf(chunks)).toBe(json.choices[0]!.message.content);
    for (const chunk of chunks.slice(0, -1)) expect(chunk.usage ?? null).toBeNull();
  });

  it("round-trips a tool call: tool_calls, then the tool result gets a normal answer", async () => {
    const ask: ChatCompletionCreateParamsNonStreaming = {
      model: PUBLIC,
      tools: [weatherTool],
      messages: [{ role: "user", content: "What is the weather in Paris today?" }],
    };
    const first = await client.chat.completions.create(ask);
    expect(validateOpenAI("CreateChatCompletionResponse", first)).toEqual([]);
    expect(first.model).toBe(PUBLIC);
    const choice = first.choices[0]!;
    expect(choice.finish_reason).toBe("tool_calls");
    const call = choice.message.tool_calls![0]!;
    expect(call.type).toBe("function");
    if (call.type !== "function") throw new Error("expected a function call");
    expect(call.function.name).toBe("get_weather");
    expect(JSON.parse(call.function.arguments)).toEqual({ location: "Paris" });

    const second = await client.chat.completions.create({
      ...ask,
      messages: [
        ...ask.messages,
        choice.message,
        { role: "tool", tool_call_id: call.id, content: '{"temperature_c": 21, "sky": "clear"}' },
      ],
    });
    expect(validateOpenAI("CreateChatCompletionResponse", second)).toEqual([]);
    expect(second.choices[0]!.finish_reason).toBe("stop");
    expect(second.choices[0]!.message.tool_calls ?? []).toEqual([]);
    expect(second.choices[0]!.message.content).toMatch(/^Mock reply [0-9a-f]{8}: /);
  });

  it("streams a tool call whose argument slices reassemble to the JSON answer's", async () => {
    const ask = { model: PUBLIC, tools: [weatherTool], messages: [{ role: "user" as const, content: "weather in Paris?" }] };
    const json = await client.chat.completions.create(ask);
    const chunks = await collect(await client.chat.completions.create({ ...ask, stream: true }));
    expectValidChunks(chunks);
    const calls = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
    expect(calls[0]).toMatchObject({ index: 0, type: "function", function: { name: "get_weather" } });
    const args = calls.map((c) => c.function?.arguments ?? "").join("");
    const expected = json.choices[0]!.message.tool_calls![0]!;
    if (expected.type !== "function") throw new Error("expected a function call");
    expect(calls[0]!.id).toBe(expected.id);
    expect(args).toBe(expected.function.arguments);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe("tool_calls");
    for (const chunk of chunks) expect(Object.keys(chunk)).not.toContain("usage");
  });

  it("settles every request exactly once: no pending debits are left behind", async () => {
    await settled();
    expect(await pendingDebits()).toEqual(["0"]);
    const { rows } = await gw.db.pool.query<{ status: string; n: string }>("select status, count(*) as n from quota_holds group by status");
    expect(rows.map((r) => r.status)).toEqual(["posted"]);
  });
});
