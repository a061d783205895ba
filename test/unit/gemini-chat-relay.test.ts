import { describe, expect, it } from "vitest";
import { geminiChatRelay } from "../../src/metering/relays/gemini-chat-relay.js";
import type { RelayContext } from "../../src/metering/relays/stream-relay.js";
import type { StreamEvent, UsageReport } from "../../src/providers/types.js";
import { UpstreamAbort } from "../../src/providers/upstream-abort.js";
import { UpstreamError } from "../../src/providers/types.js";
import { MOCK_IMAGES } from "../../src/mock-upstream/mock-images.js";
import { parseFrames } from "../helpers/sse-frames.js";

// The relay protocol of a Gemini stream told to a chat client: usage only from the final chunk, chat's end written
// after the upstream's body ended, the cap's end, and images delivered (or refused) before their chunk counts.

const LOCAL: UsageReport = { promptTokens: 4, completionTokens: 2, cachedTokens: 0 };
const ctx: RelayContext = { localUsage: () => Promise.resolve(LOCAL), delivered: true };

const relay = (clientWantsUsage: boolean) =>
  geminiChatRelay({
    publicModel: "pub",
    clientWantsUsage,
    countPrompt: () => Promise.resolve(4),
    download: { stream: () => Promise.reject(new Error("no downloads here")) },
    upstream: new UpstreamAbort(),
  });

const event = (parts: object[], final: boolean): StreamEvent => {
  const data = {
    candidates: [{ content: { role: "model", parts }, ...(final ? { finishReason: "STOP" } : {}), index: 0 }],
    usageMetadata: final
      ? { promptTokenCount: 10, candidatesTokenCount: 3, thoughtsTokenCount: 5, totalTokenCount: 18 }
      : { promptTokenCount: 10, totalTokenCount: 10 },
    responseId: "r",
  };
  return { data, raw: JSON.stringify(data) };
};

const text = (out: string | Promise<string>) => Promise.resolve(out);

describe("geminiChatRelay", () => {
  it("bills the final chunk's usage and writes it in the usage chunk, then [DONE]", async () => {
    const protocol = relay(true);
    const first = await text(protocol.transform(event([{ text: "Hi" }], false), ctx));
    expect(protocol.usage()).toBeNull();
    expect(protocol.closing!(event([{ text: "!" }], true))).toBe(true);
    const last = await text(protocol.transform(event([{ text: "!" }], true), ctx));
    expect(protocol.usage()).toEqual({ promptTokens: 10, completionTokens: 8, cachedTokens: 0 });
    const end = await text(protocol.end!(ctx));
    expect(end.endsWith("data: [DONE]\n\n")).toBe(true);
    const frames = parseFrames([first, last, end.replace("data: [DONE]\n\n", "")]).map((f) => f.data);
    expect(frames.map((f) => (f.choices as object[]).length)).toEqual([1, 1, 1, 0]);
    expect(frames.at(-1)!.usage).toEqual({
      prompt_tokens: 10,
      completion_tokens: 8,
      total_tokens: 18,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 5 },
    });
  });

  it("a client that did not ask for usage gets [DONE] alone; a stream without a final chunk shows the local count", async () => {
    expect(await text(relay(false).end!(ctx))).toBe("data: [DONE]\n\n");
    const protocol = relay(true);
    await text(protocol.transform(event([{ text: "Hi" }], false), ctx));
    const end = await text(protocol.end!(ctx));
    expect(parseFrames([end.replace("data: [DONE]\n\n", "")])[0]!.data.usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 2 });
  });

  it("ended at the output cap: every open choice finishes for length, the local usage, [DONE]", async () => {
    const protocol = relay(true);
    await text(protocol.transform(event([{ text: "Hi" }], false), ctx));
    expect(protocol.output!.delivered).toEqual(["Hi"]);
    const end = await text(protocol.output!.lengthEnd(ctx));
    const frames = parseFrames([end.replace("data: [DONE]\n\n", "")]).map((f) => f.data);
    expect(frames[0]!.choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: "length" }]);
    expect(frames[1]!.usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 2 });
  });

  it("an image is delivered typed by its bytes; one refused fails the transform and its chunk's usage never counts", async () => {
    const protocol = relay(true);
    const gif = MOCK_IMAGES.gif.toString("base64");
    const out = await text(protocol.transform(event([{ inlineData: { mimeType: "image/png", data: gif } }], false), ctx));
    expect(out).toContain(JSON.stringify(`data:image/gif;base64,${gif}`));
    const refused = relay(true);
    const failure = await text(
      refused.transform(event([{ inlineData: { mimeType: "image/png", data: "bm90IGFuIGltYWdl" } }], true), ctx),
    ).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(UpstreamError);
    expect((failure as UpstreamError).failure).toBe("invalid_output");
    expect(refused.usage()).toBeNull();
  });
});
