import { describe, expect, it } from "vitest";
import {
  convertEmbeddingsUsage,
  convertResponsesUsage,
  readResponsesStreamUsage,
} from "../../src/providers/openai/convert-openai-usage.js";
import { responsesSseRules } from "../../src/providers/openai/responses.js";

describe("OpenAI Responses and embeddings usage", () => {
  it("reads Responses usage with its cached input tokens", () => {
    expect(
      convertResponsesUsage({ input_tokens: 30, output_tokens: 7, input_tokens_details: { cached_tokens: 10 }, total_tokens: 37 }),
    ).toEqual({
      promptTokens: 30,
      completionTokens: 7,
      cachedTokens: 10,
    });
    expect(convertResponsesUsage({ input_tokens: 3, output_tokens: 1, input_tokens_details: null })).toEqual({
      promptTokens: 3,
      completionTokens: 1,
      cachedTokens: 0,
    });
  });

  it.each([null, "x", [], { input_tokens: 1 }, { input_tokens: -1, output_tokens: 0 }, { input_tokens: 1, output_tokens: 2.5 }])(
    "gives null for unusable %j",
    (usage) => {
      expect(convertResponsesUsage(usage)).toBeNull();
    },
  );

  it("reads embeddings usage as prompt tokens only", () => {
    expect(convertEmbeddingsUsage({ prompt_tokens: 8, total_tokens: 8 })).toEqual({
      promptTokens: 8,
      completionTokens: 0,
      cachedTokens: 0,
    });
    expect(convertEmbeddingsUsage({ total_tokens: 8 })).toBeNull();
  });

  it("takes stream usage from the terminal event only", () => {
    const usage = { input_tokens: 5, output_tokens: 2, input_tokens_details: { cached_tokens: 1 } };
    expect(readResponsesStreamUsage({ type: "response.created", response: { usage } }, null)).toBeNull();
    expect(readResponsesStreamUsage({ type: "response.completed", response: { usage } }, null)).toEqual({
      promptTokens: 5,
      completionTokens: 2,
      cachedTokens: 1,
    });
    expect(readResponsesStreamUsage({ type: "response.incomplete", response: { usage } }, null)).toEqual({
      promptTokens: 5,
      completionTokens: 2,
      cachedTokens: 1,
    });
    const prior = { promptTokens: 1, completionTokens: 1, cachedTokens: 0 };
    expect(readResponsesStreamUsage({ type: "response.completed", response: { usage: null } }, prior)).toBe(prior);
    expect(readResponsesStreamUsage({ type: "response.completed" }, null)).toBeNull();
  });
});

describe("Responses stream rules", () => {
  it("end at response.completed or response.incomplete", () => {
    expect(responsesSseRules.isLast!({ type: "response.completed" })).toBe(true);
    expect(responsesSseRules.isLast!({ type: "response.incomplete" })).toBe(true);
    expect(responsesSseRules.isLast!({ type: "response.output_text.delta" })).toBe(false);
  });

  it("raise error and response.failed events: 429 for rate limits, else 502", () => {
    expect(responsesSseRules.toError!({ type: "error", code: "rate_limit_exceeded", message: "x" })).toMatchObject({ status: 429 });
    expect(responsesSseRules.toError!({ type: "error", code: null })).toMatchObject({ status: 502, retryable: true });
    expect(responsesSseRules.toError!({ type: "response.failed", response: { error: { code: "server_error" } } })).toMatchObject({
      status: 502,
    });
    expect(responsesSseRules.toError!({ type: "response.failed", response: null })).toMatchObject({ status: 502 });
    expect(responsesSseRules.toError!({ type: "response.created" })).toBeNull();
  });
});
