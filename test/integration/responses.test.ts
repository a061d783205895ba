import OpenAI, { BadRequestError, NotFoundError } from "openai";
import type { ResponseStreamEvent } from "openai/resources/responses/responses";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chatQuota } from "../../src/billing/chat-quota.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { countLogWrites, settled } from "../helpers/metering-checks.js";
import { validateOpenAI } from "../helpers/openapi.js";
import { sseEvents, type SseEvent } from "../helpers/sse-frames.js";

// POST /v1/responses through the official OpenAI SDK: JSON and the event stream with the public model id,
// billing from the answer's usage or the stream's terminal event, a stream dropped midway billed for what was
// delivered (once), and bad input.

const UPSTREAM = "mock-gpt-small";
const RATES = { tokenMultiplier: 1, completionRatio: 3, cachedRatio: 1, groupMultiplier: 1 };
let mock: MockUpstream;
let proxy: FaultProxy;
let gw: TestGateway;
let client: OpenAI;
let direct: OpenAI;
let key: string;
let userSeq = 0;

beforeAll(async () => {
  mock = await startMockUpstream();
  proxy = await startFaultProxy(mock.url);
  gw = await startTestGateway({
    config: {
      providers: {
        main: { protocol: "openai", base_url: mock.baseUrl },
        dropping: { protocol: "openai", base_url: proxy.baseUrl({ "x-mock-drop-after": 2 }) },
      },
      models: {
        resp: { kind: "chat", upstream: UPSTREAM, targets: ["main"], completion_ratio: 3 },
        "resp-drop": { kind: "chat", upstream: UPSTREAM, targets: ["dropping"], completion_ratio: 3 },
        embedder: { kind: "embedding", upstream: "mock-embed", targets: ["main"] },
      },
    },
  });
  countLogWrites(gw);
  direct = new OpenAI({ apiKey: "unused", baseURL: mock.baseUrl, maxRetries: 0 });
});

afterAll(async () => {
  await gw?.close();
  await proxy?.close();
  await mock?.close();
});

async function freshUser() {
  const user = await gw.services.auth.users.create({ email: `resp-${++userSeq}@example.test`, password: "password-123" });
  ({ key } = await gw.services.auth.apiKeys.create({ user: user.id }));
  client = new OpenAI({ apiKey: key, baseURL: `${gw.url}/v1`, maxRetries: 0 });
  return user.id;
}

const hello = { input: "Say hello to the responses route", instructions: "Be terse." };

describe("POST /v1/responses", () => {
  it("answers JSON with the public model id and bills the answer's usage once", async () => {
    const userId = await freshUser();
    const answer = await client.responses.create({ model: "resp", ...hello });
    const expected = await direct.responses.create({ model: UPSTREAM, ...hello });
    expect(validateOpenAI("Response", answer)).toEqual([]);
    expect(answer.model).toBe("resp");
    expect(answer.output_text).toBe(expected.output_text);
    const s = await settled([gw], userId);
    const usage = expected.usage!;
    const charged = chatQuota({ promptTokens: usage.input_tokens, completionTokens: usage.output_tokens, cachedTokens: 0 }, RATES);
    expect(s.log).toMatchObject({
      route: "/v1/responses",
      status: 200,
      usage_source: "upstream",
      quota_charged: String(charged),
      streamed: false,
    });
  });

  it("streams the event sequence with the public model id and bills the terminal event's usage", async () => {
    const userId = await freshUser();
    const events: ResponseStreamEvent[] = [];
    for await (const event of await client.responses.create({ model: "resp", ...hello, stream: true })) events.push(event);
    for (const event of events) expect(validateOpenAI("ResponseStreamEvent", event), event.type).toEqual([]);
    expect(events[0]!.type).toBe("response.created");
    const completed = events.at(-1)!;
    if (completed.type !== "response.completed") throw new Error(`last event ${completed.type}`);
    expect(completed.response.model).toBe("resp");
    const text = events.flatMap((e) => (e.type === "response.output_text.delta" ? [e.delta] : [])).join("");
    expect(text).toBe((await direct.responses.create({ model: UPSTREAM, ...hello })).output_text);
    const s = await settled([gw], userId);
    const usage = completed.response.usage!;
    const charged = chatQuota({ promptTokens: usage.input_tokens, completionTokens: usage.output_tokens, cachedTokens: 0 }, RATES);
    expect(s.log).toMatchObject({ status: 200, usage_source: "upstream", quota_charged: String(charged), streamed: true });
    // The SDK's stream helper reads it too.
    const final = await client.responses.stream({ model: "resp", ...hello }).finalResponse();
    expect(final.output_text).toBe(text);
  });

  it("bills a stream dropped midway once, for what was delivered, and tells the client in-band", async () => {
    const userId = await freshUser();
    const res = await fetch(`${gw.url}/v1/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "resp-drop", ...hello, stream: true }),
    });
    expect(res.status).toBe(200);
    const next = sseEvents(res);
    const events: SseEvent[] = [];
    for (let event = await next(); event !== null; event = await next()) events.push(event);
    const last = events.at(-1)!;
    expect(last.event).toBe("error");
    expect(last.data).toContain("upstream_stream_interrupted");
    const s = await settled([gw], userId);
    expect(s.log).toMatchObject({ status: 200, error_class: "upstream_error", usage_source: "estimated" });
    expect(BigInt(s.log.quota_charged as string)).toBeGreaterThan(0n);
  });

  it("refuses bad input with 400 naming the field, unknown models with 404, embedding models with 400", async () => {
    await freshUser();
    const post = (body: unknown) =>
      fetch(`${gw.url}/v1/responses`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const cases: [unknown, string | null][] = [
      [{ input: "x" }, "model"],
      [{ model: "resp" }, "input"],
      [{ model: "resp", input: "" }, "input"],
      [{ model: 1, input: "x" }, "model"],
      [{ model: "resp", input: "x", stream: "yes" }, "stream"],
      [{ model: "resp", input: "x", max_output_tokens: 0 }, "max_output_tokens"],
    ];
    for (const [body, param] of cases) {
      const res = await post(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(((await res.json()) as { error: { param: unknown } }).error.param, JSON.stringify(body)).toBe(param);
    }
    await expect(client.responses.create({ model: "nope", input: "x" })).rejects.toBeInstanceOf(NotFoundError);
    await expect(client.responses.create({ model: "embedder", input: "x" })).rejects.toBeInstanceOf(BadRequestError);
  });
});
