import { describe, expect, it } from "vitest";
import { convertGeminiAnswerToChat, mapGeminiFinishReason, toChatUsage } from "../../src/providers/gemini/convert-gemini-answer-to-chat.js";
import { validateGemini } from "../helpers/gemini-proto.js";
import { validateOpenAI } from "../helpers/openapi.js";

/** The upstream answer must be a valid proto response; the translation a valid OpenAI chat completion. */
function convert(response: Record<string, unknown>) {
  expect(validateGemini("GenerateContentResponse", response)).toEqual([]);
  const completion = convertGeminiAnswerToChat(response, { publicModel: "gemini-public" });
  expect(validateOpenAI("CreateChatCompletionResponse", completion)).toEqual([]);
  return completion;
}

const usageMetadata = { promptTokenCount: 12, candidatesTokenCount: 5, totalTokenCount: 17 };

describe("convertGeminiAnswerToChat", () => {
  it("answers the text of the non-thought parts, the public model, and the usage", () => {
    const completion = convert({
      candidates: [
        {
          content: { role: "model", parts: [{ text: "Let me think", thought: true }, { text: "Hel" }, { text: "lo" }] },
          finishReason: "STOP",
          index: 0,
        },
      ],
      usageMetadata: {
        promptTokenCount: 12,
        cachedContentTokenCount: 4,
        toolUsePromptTokenCount: 3,
        candidatesTokenCount: 5,
        thoughtsTokenCount: 7,
        totalTokenCount: 27,
      },
      modelVersion: "gemini-2.5-flash",
      responseId: "abc-123",
    });
    expect(completion).toEqual({
      id: "chatcmpl-abc-123",
      object: "chat.completion",
      created: expect.any(Number),
      model: "gemini-public",
      choices: [{ index: 0, message: { role: "assistant", content: "Hello", refusal: null }, logprobs: null, finish_reason: "stop" }],
      usage: {
        prompt_tokens: 15,
        completion_tokens: 12,
        total_tokens: 27,
        prompt_tokens_details: { cached_tokens: 4 },
        completion_tokens_details: { reasoning_tokens: 7 },
      },
    });
  });

  it("turns function calls into tool_calls with ids unique in the answer, keeping thought signatures", () => {
    const completion = convert({
      candidates: [
        {
          content: {
            role: "model",
            parts: [
              { functionCall: { name: "get_weather", args: { city: "Paris" } }, thoughtSignature: "c2ln" },
              { functionCall: { name: "get_time" } },
            ],
          },
          finishReason: "STOP",
          index: 0,
        },
      ],
      usageMetadata,
      responseId: "r1",
    });
    expect(completion.choices[0]).toEqual({
      index: 0,
      message: {
        role: "assistant",
        content: null,
        refusal: null,
        tool_calls: [
          {
            id: "call_r1_0",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Paris"}' },
            extra_content: { google: { thought_signature: "c2ln" } },
          },
          { id: "call_r1_1", type: "function", function: { name: "get_time", arguments: "{}" } },
        ],
      },
      logprobs: null,
      finish_reason: "tool_calls",
    });
  });

  it("puts inline images (and image file links) in message.images as the chat image vendors do; other media is dropped", () => {
    const completion = convert({
      candidates: [
        {
          content: {
            role: "model",
            parts: [
              { text: "Here it is" },
              { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } },
              { inlineData: { mimeType: "audio/wav", data: "UklGRg==" } },
              { fileData: { mimeType: "image/jpeg", fileUri: "https://example.com/a.jpg" } },
            ],
          },
          finishReason: "STOP",
          index: 0,
        },
      ],
      usageMetadata,
    });
    expect(completion.choices[0]!.message).toEqual({
      role: "assistant",
      content: "Here it is",
      refusal: null,
      images: [
        { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
        { type: "image_url", image_url: { url: "https://example.com/a.jpg" } },
      ],
    });
    expect(completion.id).toMatch(/^chatcmpl-[0-9a-f]{32}$/);
  });

  it("a blocked prompt is one empty choice ended by the content filter", () => {
    const completion = convert({
      promptFeedback: { blockReason: "SAFETY", safetyRatings: [{ category: "HARM_CATEGORY_HARASSMENT", probability: "HIGH" }] },
      usageMetadata: { promptTokenCount: 8, totalTokenCount: 8 },
    });
    expect(completion.choices).toEqual([
      { index: 0, message: { role: "assistant", content: null, refusal: null }, logprobs: null, finish_reason: "content_filter" },
    ]);
    expect(completion.usage).toMatchObject({ prompt_tokens: 8, completion_tokens: 0 });
  });

  it("keeps every candidate as a choice; leaves usage out when usageMetadata has none to bill", () => {
    const completion = convert({
      candidates: [
        { content: { role: "model", parts: [{ text: "A" }] }, finishReason: "MAX_TOKENS", index: 0 },
        { content: { role: "model", parts: [{ text: "B" }] }, finishReason: "SAFETY", index: 1 },
      ],
    });
    expect(completion.choices.map((c) => [c.index, c.message.content, c.finish_reason])).toEqual([
      [0, "A", "length"],
      [1, "B", "content_filter"],
    ]);
    expect(completion).not.toHaveProperty("usage");
  });

  it("reads a malformed answer as absent fields, never throwing", () => {
    const completion = convertGeminiAnswerToChat(
      { candidates: [null, { content: { parts: "x" }, index: -1 }, { content: { parts: [{ text: 5, functionCall: { args: 1 } }] } }] },
      { publicModel: "m" },
    );
    expect(completion.choices.map((c) => [c.index, c.message.content, c.finish_reason])).toEqual([
      [1, null, "stop"],
      [2, null, "stop"],
    ]);
  });
});

describe("mapGeminiFinishReason", () => {
  it.each([
    ["STOP", false, "stop"],
    ["STOP", true, "tool_calls"],
    ["MAX_TOKENS", true, "length"],
    ["SAFETY", false, "content_filter"],
    ["RECITATION", false, "content_filter"],
    ["PROHIBITED_CONTENT", false, "content_filter"],
    ["IMAGE_SAFETY", false, "content_filter"],
    ["OTHER", false, "stop"],
    ["MALFORMED_FUNCTION_CALL", false, "stop"],
    [undefined, false, "stop"],
  ])("%s (calls: %s) → %s", (reason, calls, expected) => {
    expect(mapGeminiFinishReason(reason, calls)).toBe(expected);
  });
});

describe("toChatUsage", () => {
  it("never shows more reasoning tokens than completion tokens", () => {
    expect(toChatUsage({ promptTokens: 3, completionTokens: 2, cachedTokens: 1 }, 9)).toEqual({
      prompt_tokens: 3,
      completion_tokens: 2,
      total_tokens: 5,
      prompt_tokens_details: { cached_tokens: 1 },
      completion_tokens_details: { reasoning_tokens: 2 },
    });
  });
});
