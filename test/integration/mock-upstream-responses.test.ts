import OpenAI, { InternalServerError } from "openai";
import type { Response as OpenAIResponse, ResponseStreamEvent } from "openai/resources/responses/responses";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type MockUpstream, startMockUpstream } from "../../src/mock-upstream/server.js";
import { postJson } from "../helpers/mock-upstream-client.js";
import { validateOpenAI } from "../helpers/openapi.js";
import { readSse } from "../helpers/sse-frames.js";

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

const hello = { model: "mock-gpt-small", input: "Say hello" }; // 9 chars
const weather = {
  model: "mock-gpt-large",
  input: "What's the weather in Paris?",
  tools: [
    { type: "function" as const, name: "get_weather", parameters: { type: "object", properties: {} }, strict: true },
    { type: "function" as const, name: "get_time", parameters: { type: "object", properties: {} }, strict: true },
  ],
};

const post = (body: unknown, headers: Record<string, string> = {}) =>
  postJson(`${mock.baseUrl}/responses`, body, { authorization: `Bearer ${API_KEY}`, ...headers });
const responseOf = async (res: Response) => (await res.json()) as OpenAIResponse;

/** The raw events of a streamed answer, each checked against the reference schema and its `event:` line. */
async function streamed(body: object, headers: Record<string, string> = {}) {
  const { events, broken } = await readSse(await post({ ...body, stream: true }, headers));
  const parsed = events.map((e) => {
    const data = JSON.parse(e.data) as ResponseStreamEvent;
    expect(validateOpenAI("ResponseStreamEvent", data), data.type).toEqual([]);
    expect(e.event).toBe(data.type);
    return data;
  });
  return { events: parsed, broken };
}

/** An input whose natural answer is longer than the API's smallest max_output_tokens (16), found by asking. */
async function longAnswerInput(): Promise<string> {
  for (let i = 0; ; i++) {
    const input = `Tell me a story, take ${i}`;
    const res = await client.responses.create({ model: "mock-gpt-small", input });
    if (res.usage!.output_tokens > 16) return input;
  }
}

describe("mock upstream: responses (JSON)", () => {
  it("answers a Response object deterministically, with usage following the prompt rule", async () => {
    const [first, second] = await Promise.all([post(hello), post(hello)]);
    const raw = await first.text();
    expect(await second.text()).toBe(raw);
    const body = JSON.parse(raw) as OpenAIResponse;
    expect(validateOpenAI("Response", body)).toEqual([]);
    expect(body).toMatchObject({ object: "response", status: "completed", model: "mock-gpt-small", incomplete_details: null });
    expect(body.id).toMatch(/^resp_[0-9a-f]{48}$/);

    const sdk = await client.responses.create(hello);
    const item = sdk.output[0]!;
    expect(item.type === "message" && item.role).toBe("assistant");
    const text = item.type === "message" && item.content[0]!.type === "output_text" ? item.content[0]!.text : "";
    expect(text).toMatch(/^Mock reply [0-9a-f]{8}: \w+/);
    expect(sdk.output_text).toBe(text);
    const words = text.split(" ").length - 3;
    // ceil(9 / 4) + 3 for the one message
    expect(sdk.usage).toEqual({
      input_tokens: 6,
      input_tokens_details: { cached_tokens: 0, cache_write_tokens: 0 },
      output_tokens: words,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 6 + words,
    });
    const other = await client.responses.create({ ...hello, input: "Say goodbye" });
    expect(other.output_text).not.toBe(text);
  });

  it("takes input items and instructions, each a message of the prompt rule", async () => {
    const res = await client.responses.create({
      model: "mock-gpt-small",
      instructions: "Be terse.", // 9 chars
      input: [{ role: "user", content: "Say hello" }], // 9 chars
    });
    expect(res.instructions).toBe("Be terse.");
    // ceil(18 / 4) + 3 per message
    expect(res.usage!.input_tokens).toBe(5 + 6);
    const withoutInstructions = await client.responses.create({ model: "mock-gpt-small", input: [{ role: "user", content: "Say hello" }] });
    expect(withoutInstructions.output_text).not.toBe(res.output_text);
  });

  it("stops at max_output_tokens with status incomplete and the uncapped answer's prefix", async () => {
    const input = await longAnswerInput();
    const full = await client.responses.create({ model: "mock-gpt-small", input });
    const capped = await responseOf(await post({ model: "mock-gpt-small", input, max_output_tokens: 16 }));
    expect(validateOpenAI("Response", capped)).toEqual([]);
    expect(capped.status).toBe("incomplete");
    expect(capped.incomplete_details).toEqual({ reason: "max_output_tokens" });
    expect(capped.output[0]!.type === "message" && capped.output[0]!.status).toBe("incomplete");
    expect(capped.usage!.output_tokens).toBe(16);
    const cappedText = await client.responses.create({ model: "mock-gpt-small", input, max_output_tokens: 16 });
    expect(full.output_text.startsWith(cappedText.output_text)).toBe(true);
  });

  it("calls the first function when asked about the weather, or the one tool_choice names", async () => {
    const raw = await responseOf(await post(weather));
    expect(validateOpenAI("Response", raw)).toEqual([]);
    const call = raw.output[0]!;
    expect(call.type).toBe("function_call");
    expect(call.type === "function_call" && [call.name, JSON.parse(call.arguments), call.call_id.startsWith("call_")]).toEqual([
      "get_weather",
      { location: "Paris" },
      true,
    ]);
    const named = await client.responses.create({ ...weather, tool_choice: { type: "function", name: "get_time" } });
    expect(named.output[0]!.type === "function_call" && named.output[0]!.name).toBe("get_time");
    const none = await client.responses.create({ ...weather, tool_choice: "none" });
    expect(none.output[0]!.type).toBe("message");

    // The function's output comes back as input items: the last item is no user message, so text follows.
    const after = await client.responses.create({
      ...weather,
      input: [
        { role: "user", content: weather.input },
        { type: "function_call", call_id: "call_1", name: "get_weather", arguments: '{"location":"Paris"}' },
        { type: "function_call_output", call_id: "call_1", output: "sunny" },
      ],
    });
    expect(after.output[0]!.type).toBe("message");
  });

  it.each([
    [{ model: "mock-gpt-small" }, "input"],
    [{ model: "mock-gpt-small", input: 42 }, "input"],
    [{ model: "mock-gpt-small", input: [] }, "input"],
    [{ input: "hi" }, "model"],
    [{ ...hello, max_output_tokens: 5 }, "max_output_tokens"],
    [{ ...hello, tools: [{ type: "function" }] }, "tools.0.name"],
  ])("answers %j with 400 naming %s", async (body, param) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    const error = (await res.json()) as { error: { param: string | null } };
    expect(validateOpenAI("ErrorResponse", error)).toEqual([]);
    expect(error.error.param).toBe(param);
  });
});

describe("mock upstream: responses (stream)", () => {
  it("sends the real API's event sequence, usage only at the end, ending in the JSON answer", async () => {
    const json = await responseOf(await post(hello));
    const { events, broken } = await streamed(hello);
    expect(broken).toBe(false);
    const deltas = events.filter((e) => e.type === "response.output_text.delta");
    expect(events.map((e) => e.type)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      ...deltas.map(() => "response.output_text.delta"),
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(deltas).toHaveLength(json.usage!.output_tokens);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(events[0]!.type === "response.created" && events[0]!.response.usage).toBeNull();
    const last = events.at(-1)!;
    expect(last.type === "response.completed" && last.response).toEqual(json);
  });

  it("works with the SDK's stream helper and create({stream: true})", async () => {
    const json = await client.responses.create(hello);
    const stream = client.responses.stream(hello);
    let text = "";
    stream.on("response.output_text.delta", (e) => (text += e.delta));
    // The helper adds its own parsed fields (output_parsed, …) to what the API sent.
    expect(await stream.finalResponse()).toMatchObject(json);
    expect(text).toBe(json.output_text);

    const types: string[] = [];
    for await (const event of await client.responses.create({ ...hello, stream: true })) types.push(event.type);
    expect(types.at(-1)).toBe("response.completed");
  });

  it("streams a function call as argument deltas", async () => {
    const { events } = await streamed(weather);
    const args = events.flatMap((e) => (e.type === "response.function_call_arguments.delta" ? [e.delta] : [])).join("");
    expect(JSON.parse(args)).toEqual({ location: "Paris" });
    expect(events.some((e) => e.type === "response.output_text.delta")).toBe(false);
    expect(events.at(-1)!.type).toBe("response.completed");
  });

  it("ends a capped stream with response.incomplete", async () => {
    const { events } = await streamed({ model: "mock-gpt-small", input: await longAnswerInput(), max_output_tokens: 16 });
    const last = events.at(-1)!;
    expect(last.type).toBe("response.incomplete");
    expect(last.type === "response.incomplete" && last.response.incomplete_details).toEqual({ reason: "max_output_tokens" });
  });
});

describe("mock upstream: responses faults", () => {
  it("x-mock-status answers an OpenAI-shaped error with Retry-After", async () => {
    const err = await client.responses
      .create(hello, { headers: { "x-mock-status": "503", "x-mock-retry-after": "4" } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InternalServerError);
    expect((err as InternalServerError).status).toBe(503);
    expect((err as InternalServerError).headers.get("retry-after")).toBe("4");
    const raw = await post({ ...hello, stream: true }, { "x-mock-status": "503" });
    expect(validateOpenAI("ErrorResponse", await raw.json())).toEqual([]);
  });

  it("x-mock-omit-usage leaves usage null in JSON and in the final event", async () => {
    const json = await responseOf(await post(hello, { "x-mock-omit-usage": "1" }));
    expect(json.usage).toBeNull();
    const { events } = await streamed(hello, { "x-mock-omit-usage": "1" });
    const last = events.at(-1)!;
    expect(last.type === "response.completed" && last.response.usage).toBeNull();
  });

  it("x-mock-drop-after cuts the stream after that many text deltas", async () => {
    const { events, broken } = await streamed(hello, { "x-mock-drop-after": "2" });
    expect(broken).toBe(true);
    expect(events.map((e) => e.type)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
    ]);
  });

  it("x-mock-delay-ms and x-mock-chunk-delay-ms still answer in full", async () => {
    expect((await post(hello, { "x-mock-delay-ms": "20" })).status).toBe(200);
    const { events } = await streamed(hello, { "x-mock-chunk-delay-ms": "2" });
    expect(events.at(-1)!.type).toBe("response.completed");
  });
});
