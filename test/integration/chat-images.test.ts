import type { ChatCompletion, ChatCompletionChunk, ChatCompletionCreateParamsNonStreaming } from "openai/resources/chat/completions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";
import { CHAT_IMAGE_TOKENS } from "../../src/mock-upstream/openai-chat-images.js";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import { collect } from "../helpers/async-iter.js";
import { startFaultProxy, type FaultProxy } from "../helpers/fault-proxy.js";
import { sdkUser } from "../helpers/sdk-user.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { countLogWrites, settled as settledOnce } from "../helpers/metering-checks.js";
import { validateOpenAI } from "../helpers/openapi.js";
import { readSse } from "../helpers/sse-frames.js";

// Images returned by an image-capable chat model (issue 14, delivery rules 1-3) through POST /v1/chat/completions:
// the official SDK for the good answers, raw HTTP for the faults, which reach the mock upstream through a proxy
// (one provider per `x-mock-image` kind). The mock's links point at 127.0.0.1, allowed by media.download.

const UPSTREAM = "mock-gpt-image-chat";
const KINDS = ["gif", "not-image", "invalid-base64", "url", "url-404", "url-redirect-private"] as const;

let mock: MockUpstream;
let proxy: FaultProxy;
let gw: TestGateway;

/** One provider and model per `x-mock-image` kind (model `plain`: no fault; `fixed`: the proxy's fixed answer). */
const providerIds = ["plain", "fixed", ...KINDS];

beforeAll(async () => {
  mock = await startMockUpstream();
  proxy = await startFaultProxy(mock.url);
  const faultsOf = (id: string): Record<string, string> => ((KINDS as readonly string[]).includes(id) ? { "x-mock-image": id } : {});
  gw = await startTestGateway({
    config: {
      providers: Object.fromEntries(providerIds.map((id) => [id, { protocol: "openai" as const, base_url: proxy.baseUrl(faultsOf(id)) }])),
      models: Object.fromEntries(providerIds.map((id) => [id, { kind: "chat" as const, upstream: UPSTREAM, targets: [id] }])),
      plans: { basic: { daily_tokens: 1_000_000, context_limit: 100_000 } },
      default_plan: "basic",
      media: { download: { allow_private: ["127.0.0.1"] } },
    },
  });
  countLogWrites(gw);
});

afterAll(async () => {
  await gw?.close();
  await proxy?.close();
  await mock?.close();
});

const freshUser = () => sdkUser(gw, "chat-images", "basic");

const messages = [{ role: "user" as const, content: "Draw a blue square" }];
/** The SDK types `modalities` as text and audio only; image-capable vendors take "image" in the same field. */
const imageRequest = (model: string) =>
  ({ model, messages, modalities: ["image", "text"] }) as unknown as ChatCompletionCreateParamsNonStreaming;

type ImageItem = { type: string; image_url: { url: string } };
type WithImages = { images?: ImageItem[] };

const pngUri = `data:image/png;base64,${MOCK_IMAGES.png.toString("base64")}`;

function chat(key: string, body: object) {
  return fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

describe("images in chat answers through the OpenAI SDK", () => {
  it("JSON: the image arrives as a data: URI typed by its bytes; the answer is billed on the upstream's usage", async () => {
    const user = await freshUser();
    const answer = await user.client.chat.completions.create(imageRequest("plain"));
    expect(validateOpenAI("CreateChatCompletionResponse", answer)).toEqual([]);
    expect(answer.model).toBe("plain");
    const message = answer.choices[0]!.message as ChatCompletion.Choice["message"] & WithImages;
    expect(message.content).toMatch(/^Mock reply /);
    expect(message.images).toEqual([{ type: "image_url", image_url: { url: pngUri } }]);
    expect(answer.usage!.completion_tokens).toBeGreaterThan(CHAT_IMAGE_TOKENS);

    const s = await settledOnce([gw], user.id);
    expect(s.hold.status).toBe("posted");
    expect(s.log).toMatchObject({ status: 200, usage_source: "upstream", output_tokens: answer.usage!.completion_tokens });
  });

  it("stream: the chunk with the image carries it as a data: URI", async () => {
    const user = await freshUser();
    const stream = await user.client.chat.completions.create({ ...imageRequest("plain"), stream: true });
    const chunks: ChatCompletionChunk[] = await collect(stream);
    for (const chunk of chunks) expect(validateOpenAI("CreateChatCompletionStreamResponse", chunk)).toEqual([]);
    const images = chunks.flatMap((chunk) => (chunk.choices[0]?.delta as WithImages | undefined)?.images ?? []);
    expect(images).toEqual([{ type: "image_url", image_url: { url: pngUri } }]);
    expect(chunks.every((chunk) => chunk.model === "plain")).toBe(true);
    expect(chunks.at(-1)!.choices[0]!.finish_reason).toBe("stop");

    const s = await settledOnce([gw], user.id);
    expect(s.log).toMatchObject({ status: 200, usage_source: "upstream", error_code: null, streamed: true });
  });
});

describe("delivery rules on chat answers (raw HTTP)", () => {
  it("a data: URI's declared type is not trusted: GIF bytes labelled PNG arrive as image/gif", async () => {
    const user = await freshUser();
    const res = await chat(user.key, imageRequest("gif"));
    expect(res.status).toBe(200);
    const body = (await res.json()) as { choices: { message: WithImages }[] };
    expect(body.choices[0]!.message.images![0]!.image_url.url).toBe(`data:image/gif;base64,${MOCK_IMAGES.gif.toString("base64")}`);
  });

  it.each([false, true])("an upstream link is downloaded, never relayed (stream: %s)", async (stream) => {
    const user = await freshUser();
    const res = await chat(user.key, Object.assign({ stream }, imageRequest("url")));
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).not.toContain("mock-images");
    expect(text).not.toContain("127.0.0.1");
    expect(text).toContain(JSON.stringify(pngUri));
    await settledOnce([gw], user.id);
  });

  it("an image_url content part is delivered like message.images", async () => {
    const user = await freshUser();
    const link = `${mock.url}/mock-images/abcdef-0.webp`;
    const answer = {
      id: "chatcmpl-fixed",
      object: "chat.completion",
      created: 1,
      model: UPSTREAM,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content: [
              { type: "text", text: "Here:" },
              { type: "image_url", image_url: { url: link } },
            ],
          },
          finish_reason: "stop",
        },
      ],
      usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 },
    };
    proxy.respond = { status: 200, body: JSON.stringify(answer) };
    try {
      const res = await chat(user.key, { model: "fixed", messages });
      expect(res.status).toBe(200);
      const body = (await res.json()) as { model: string; choices: { message: { content: unknown[] } }[] };
      expect(body.model).toBe("fixed");
      expect(body.choices[0]!.message.content).toEqual([
        { type: "text", text: "Here:" },
        { type: "image_url", image_url: { url: `data:image/webp;base64,${MOCK_IMAGES.webp.toString("base64")}` } },
      ]);
    } finally {
      proxy.reset();
    }
    await settledOnce([gw], user.id);
  });

  it("an answer without images is relayed byte for byte, but for the public model ID", async () => {
    const user = await freshUser();
    const body = { model: UPSTREAM, messages, max_tokens: 12 };
    const direct = await (
      await fetch(`${mock.baseUrl}/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      })
    ).text();
    const res = await chat(user.key, Object.assign({}, body, { model: "plain" }));
    expect(await res.text()).toBe(direct.replace(`"model":"${UPSTREAM}"`, '"model":"plain"'));
    await settledOnce([gw], user.id);
  });

  it.each(["not-image", "invalid-base64", "url-404", "url-redirect-private"])(
    "JSON, x-mock-image: %s → 502 upstream_invalid_output, the hold released, nothing delivered",
    async (kind) => {
      const user = await freshUser();
      const asked = proxy.requests.length;
      const res = await chat(user.key, imageRequest(kind));
      expect(res.status).toBe(502);
      const text = await res.text();
      expect(JSON.parse(text)).toMatchObject({ error: { code: "upstream_invalid_output", type: "api_error", param: null } });
      expect(text).not.toContain("127.0.0.1");
      expect(text).not.toContain("Mock reply");
      // Refused output is never retried elsewhere: one upstream call.
      expect(proxy.requests.length - asked).toBe(1);

      const s = await settledOnce([gw], user.id);
      expect(s.hold).toMatchObject({ status: "voided", charged: null });
      expect(s.log).toMatchObject({ status: 502, error_code: "upstream_invalid_output", quota_charged: "0", usage_source: "none" });
    },
  );

  it("stream, invalid image: the text before it is delivered and billed, then an error event ends the stream", async () => {
    const user = await freshUser();
    const res = await chat(user.key, Object.assign({ stream: true }, imageRequest("invalid-base64")));
    expect(res.status).toBe(200);
    const { events, broken } = await readSse(res);
    expect(broken).toBe(false);
    const last = JSON.parse(events.at(-1)!.data) as { error: Record<string, unknown> };
    expect(last.error).toMatchObject({ code: "upstream_invalid_output", type: "api_error", request_id: res.headers.get("x-request-id") });
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data) as ChatCompletionChunk);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.some((chunk) => (chunk.choices[0]?.delta as WithImages | undefined)?.images)).toBe(false);
    expect(events.some((e) => e.data === "[DONE]")).toBe(false);

    // Billed for the delivered text only (the local count: the upstream's usage, image included, never came).
    const s = await settledOnce([gw], user.id);
    expect(s.hold.status).toBe("posted");
    expect(s.log).toMatchObject({ status: 200, error_code: "upstream_invalid_output", usage_source: "estimated", streamed: true });
    expect(Number(s.log.output_tokens)).toBeLessThan(CHAT_IMAGE_TOKENS);
  });
});
