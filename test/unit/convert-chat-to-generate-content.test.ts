import { describe, expect, it } from "vitest";
import { convertChatToGenerateContent } from "../../src/providers/gemini/convert-chat-to-generate-content.js";
import { convertGeminiUsage } from "../../src/providers/gemini/convert-gemini-usage.js";
import { mapChatFinishReason } from "../../src/providers/gemini/map-gemini-finish-reason.js";
import type { GenerateContentResponse } from "../../src/providers/gemini/response-types.js";
import { validateGemini } from "../helpers/gemini-proto.js";

const completion = (choices: object[], extra: Record<string, unknown> = {}) => ({
  id: "chatcmpl-9",
  object: "chat.completion",
  created: 1,
  model: "gpt-x",
  choices,
  usage: { prompt_tokens: 20, completion_tokens: 5, total_tokens: 25, prompt_tokens_details: { cached_tokens: 8 } },
  ...extra,
});
const choice = (message: object, finish: string | null = "stop", index = 0) => ({
  index,
  message: { role: "assistant", ...message },
  finish_reason: finish,
});

/** Valid per the proto, and with what a GenerateContentResponse must hold for the SDKs. */
function convert(
  body: Record<string, unknown>,
  usage?: Parameters<typeof convertChatToGenerateContent>[1]["usage"],
): GenerateContentResponse {
  const response = convertChatToGenerateContent(
    body,
    usage === undefined ? { publicModel: "gemini-public" } : { publicModel: "gemini-public", usage },
  );
  expect(validateGemini("GenerateContentResponse", response)).toEqual([]);
  expect(response.modelVersion).toBe("gemini-public");
  for (const candidate of response.candidates) {
    expect(candidate.content.role).toBe("model");
    expect(candidate.content.parts.length).toBeGreaterThan(0);
    expect(candidate.finishReason).toBeDefined();
  }
  return response;
}

describe("convertChatToGenerateContent", () => {
  it("maps a text answer with usage and the public model", () => {
    expect(convert(completion([choice({ content: "Hello." })]))).toEqual({
      candidates: [{ content: { role: "model", parts: [{ text: "Hello." }] }, finishReason: "STOP", index: 0 }],
      usageMetadata: { promptTokenCount: 20, candidatesTokenCount: 5, cachedContentTokenCount: 8, totalTokenCount: 25 },
      modelVersion: "gemini-public",
      responseId: "chatcmpl-9",
    });
  });

  it("round-trips its usage through the Gemini usage reader", () => {
    const response = convert(completion([choice({ content: "x" })]), { promptTokens: 30, completionTokens: 12, cachedTokens: 10 });
    expect(convertGeminiUsage(response.usageMetadata)).toEqual({ promptTokens: 30, completionTokens: 12, cachedTokens: 10 });
    expect(
      convert(completion([choice({ content: "x" })]), { promptTokens: 3, completionTokens: 0, cachedTokens: 0 }).usageMetadata,
    ).toEqual({ promptTokenCount: 3, totalTokenCount: 3 });
  });

  it("maps tool calls to functionCall parts with parsed args and the call id", () => {
    const response = convert(
      completion([
        choice(
          {
            content: "Checking.",
            tool_calls: [
              { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
              { id: "call_2", type: "function", function: { name: "bad_args", arguments: "{not json" } },
            ],
          },
          "tool_calls",
        ),
      ]),
    );
    expect(response.candidates[0]).toEqual({
      content: {
        role: "model",
        parts: [
          { text: "Checking." },
          { functionCall: { id: "call_1", name: "get_weather", args: { city: "Paris" } } },
          { functionCall: { id: "call_2", name: "bad_args", args: {} } },
        ],
      },
      finishReason: "STOP",
      index: 0,
    });
  });

  it("makes every choice a candidate (candidateCount)", () => {
    const response = convert(completion([choice({ content: "a" }, "stop", 0), choice({ content: "b" }, "length", 1)]));
    expect(response.candidates.map((c) => [c.index, c.finishReason, c.content.parts])).toEqual([
      [0, "STOP", [{ text: "a" }]],
      [1, "MAX_TOKENS", [{ text: "b" }]],
    ]);
  });

  it.each([
    ["stop", "STOP"],
    ["tool_calls", "STOP"],
    ["function_call", "STOP"],
    ["length", "MAX_TOKENS"],
    ["content_filter", "SAFETY"],
    [null, "STOP"],
    ["something_new", "OTHER"],
  ])("maps finish_reason %s to %s", (finish, reason) => {
    expect(mapChatFinishReason(finish)).toBe(reason);
    expect(convert(completion([choice({ content: "x" }, finish)])).candidates[0]!.finishReason).toBe(reason);
  });

  it("gives an empty answer one empty text part, and a refusal as text", () => {
    expect(convert(completion([choice({ content: "" })])).candidates[0]!.content.parts).toEqual([{ text: "" }]);
    expect(convert(completion([choice({ content: null, refusal: "No." })])).candidates[0]!.content.parts).toEqual([{ text: "No." }]);
  });

  it("survives odd upstream answers", () => {
    for (const odd of [
      {},
      { choices: "x" },
      { choices: [null, 5] },
      { choices: [{ message: null, index: "1" }] },
      { id: 3, choices: [{ message: { tool_calls: [null, { function: { name: 5 } }] } }], usage: "x" },
    ]) {
      const response = convert(odd);
      expect(response).not.toHaveProperty("usageMetadata");
      expect(response).not.toHaveProperty("responseId");
    }
  });
});
