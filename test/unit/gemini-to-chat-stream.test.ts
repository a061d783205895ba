import { describe, expect, it } from "vitest";
import { createGeminiToChatStream, type ChatChunk } from "../../src/providers/gemini/gemini-to-chat-stream.js";
import { validateGemini } from "../helpers/gemini-proto.js";
import { validateOpenAI } from "../helpers/openapi.js";

/** Every Gemini chunk fed must be a valid proto response; every chat chunk out a valid OpenAI stream chunk. */
function run(geminiChunks: Record<string, unknown>[]) {
  const stream = createGeminiToChatStream({ publicModel: "gemini-public" });
  const out: ChatChunk[] = [];
  for (const data of geminiChunks) {
    expect(validateGemini("GenerateContentResponse", data)).toEqual([]);
    out.push(...stream.push(data));
  }
  for (const chunk of out) expect(validateOpenAI("CreateChatCompletionStreamResponse", chunk)).toEqual([]);
  return { stream, out };
}

const text = (t: string, extra: object = {}) => ({
  candidates: [{ content: { role: "model", parts: [{ text: t }] }, index: 0, ...extra }],
  responseId: "r1",
});

describe("createGeminiToChatStream", () => {
  it("opens with the role, then one chunk per Gemini chunk, the last with its finish reason", () => {
    const { out } = run([text("Hel"), text("lo"), text("!", { finishReason: "STOP" })]);
    expect(out.map((c) => c.choices)).toEqual([
      [{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }],
      [{ index: 0, delta: { content: "Hel" }, logprobs: null, finish_reason: null }],
      [{ index: 0, delta: { content: "lo" }, logprobs: null, finish_reason: null }],
      [{ index: 0, delta: { content: "!" }, logprobs: null, finish_reason: "stop" }],
    ]);
    expect(new Set(out.map((c) => `${c.id} ${c.object} ${c.model} ${c.created}`)).size).toBe(1);
    expect(out[0]).toMatchObject({ id: "chatcmpl-r1", object: "chat.completion.chunk", model: "gemini-public" });
  });

  it("streams function calls whole, indexed within their choice, and ends the turn as tool_calls", () => {
    const { out } = run([
      {
        candidates: [
          {
            content: {
              role: "model",
              parts: [{ functionCall: { name: "a", args: { x: 1 } }, thoughtSignature: "c2ln" }, { functionCall: { name: "b", args: {} } }],
            },
            index: 0,
          },
        ],
        responseId: "r2",
      },
      { candidates: [{ content: { role: "model", parts: [{ text: "" }] }, finishReason: "STOP", index: 0 }], responseId: "r2" },
    ]);
    expect(out[1]!.choices[0]!.delta.tool_calls).toEqual([
      {
        index: 0,
        id: "call_r2_0",
        type: "function",
        function: { name: "a", arguments: '{"x":1}' },
        extra_content: { google: { thought_signature: "c2ln" } },
      },
      { index: 1, id: "call_r2_1", type: "function", function: { name: "b", arguments: "{}" } },
    ]);
    expect(out[2]!.choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: "tool_calls" }]);
  });

  it("carries images in delta.images", () => {
    const { out } = run([
      {
        candidates: [
          {
            content: { role: "model", parts: [{ inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } }] },
            finishReason: "STOP",
            index: 0,
          },
        ],
      },
    ]);
    expect(out[1]!.choices[0]!.delta).toEqual({
      images: [{ type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } }],
    });
  });

  it("a blocked prompt finishes choice 0 as content_filter", () => {
    const { out } = run([
      { promptFeedback: { blockReason: "PROHIBITED_CONTENT" }, usageMetadata: { promptTokenCount: 3, totalTokenCount: 3 } },
    ]);
    expect(out.map((c) => c.choices[0]!.finish_reason)).toEqual([null, "content_filter"]);
  });

  it("several candidates: each opens with its role; finishAll ends those still open", () => {
    const { stream, out } = run([
      {
        candidates: [
          { content: { role: "model", parts: [{ text: "A" }] }, index: 0 },
          { content: { role: "model", parts: [{ text: "B" }] }, finishReason: "STOP", index: 1 },
        ],
      },
    ]);
    expect(out[0]!.choices.map((c) => c.index)).toEqual([0, 1]);
    const finish = stream.finishAll("length")!;
    expect(validateOpenAI("CreateChatCompletionStreamResponse", finish)).toEqual([]);
    expect(finish.choices).toEqual([{ index: 0, delta: {}, logprobs: null, finish_reason: "length" }]);
    expect(stream.finishAll("length")).toBeNull();
  });

  it("writes the usage chunk with no choices", () => {
    const { stream } = run([text("x", { finishReason: "STOP" })]);
    const usage = {
      prompt_tokens: 3,
      completion_tokens: 1,
      total_tokens: 4,
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
    };
    const chunk = stream.usageChunk(usage);
    expect(validateOpenAI("CreateChatCompletionStreamResponse", chunk)).toEqual([]);
    expect(chunk).toMatchObject({ id: "chatcmpl-r1", choices: [], usage });
  });
});
