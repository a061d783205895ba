import { describe, expect, it } from "vitest";
import { convertAnthropicUsage, readAnthropicStreamUsage } from "../../src/providers/anthropic/convert-anthropic-usage.js";

describe("convertAnthropicUsage", () => {
  it("sums the three prompt parts; only cache reads are cached", () => {
    expect(
      convertAnthropicUsage({ input_tokens: 10, cache_creation_input_tokens: 100, cache_read_input_tokens: 50, output_tokens: 7 }),
    ).toEqual({
      promptTokens: 160,
      completionTokens: 7,
      cachedTokens: 50,
    });
  });
  it("reads null or absent cache fields as zero", () => {
    expect(convertAnthropicUsage({ input_tokens: 3, output_tokens: 1, cache_read_input_tokens: null })).toEqual({
      promptTokens: 3,
      completionTokens: 1,
      cachedTokens: 0,
    });
  });
  it.each([null, 5, [], {}, { input_tokens: 3 }, { input_tokens: "3", output_tokens: 1 }, { input_tokens: 3, output_tokens: -1 }])(
    "gives null for %j",
    (usage) => {
      expect(convertAnthropicUsage(usage)).toBeNull();
    },
  );
});

describe("readAnthropicStreamUsage", () => {
  const start = { type: "message_start", message: { usage: { input_tokens: 25, cache_read_input_tokens: 5, output_tokens: 1 } } };

  it("takes the prompt from message_start and the cumulative output from message_delta", () => {
    let usage = readAnthropicStreamUsage(start, null);
    expect(usage).toEqual({ promptTokens: 30, completionTokens: 1, cachedTokens: 5 });
    usage = readAnthropicStreamUsage({ type: "content_block_delta", delta: { type: "text_delta", text: "x" } }, usage);
    usage = readAnthropicStreamUsage({ type: "message_delta", delta: {}, usage: { output_tokens: 15 } }, usage);
    expect(usage).toEqual({ promptTokens: 30, completionTokens: 15, cachedTokens: 5 });
  });

  it("lets message_delta's cumulative prompt parts replace message_start's", () => {
    const usage = readAnthropicStreamUsage(
      { type: "message_delta", usage: { input_tokens: 40, cache_creation_input_tokens: 2, cache_read_input_tokens: 5, output_tokens: 9 } },
      readAnthropicStreamUsage(start, null),
    );
    expect(usage).toEqual({ promptTokens: 47, completionTokens: 9, cachedTokens: 5 });
  });

  it("keeps what it had when an event's usage is unusable, and knows nothing from message_delta alone", () => {
    const prior = readAnthropicStreamUsage(start, null);
    expect(readAnthropicStreamUsage({ type: "message_delta", usage: { output_tokens: "9" } }, prior)).toBe(prior);
    expect(readAnthropicStreamUsage({ type: "message_start", message: null }, prior)).toBe(prior);
    expect(readAnthropicStreamUsage({ type: "message_delta", usage: { output_tokens: 9 } }, null)).toBeNull();
  });
});
