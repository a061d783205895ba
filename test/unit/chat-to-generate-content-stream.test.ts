import { describe, expect, it } from "vitest";
import { createChatToGenerateContentStream } from "../../src/providers/gemini/chat-to-generate-content-stream.js";
import { geminiSseRules } from "../../src/providers/gemini/generate-content.js";
import { readGeminiStreamUsage } from "../../src/providers/gemini/convert-gemini-usage.js";
import type { UsageReport } from "../../src/providers/types.js";
import { emptyContent, lengthFinish, textOnly, toolCallSplit, twoToolCalls, usageOnlyFinal } from "../fixtures/chat-stream-chunks.js";
import { validateGemini } from "../helpers/gemini-proto.js";
import { parseFrames } from "../helpers/sse-frames.js";

type Chunk = {
  candidates: { content: { parts: Record<string, unknown>[] }; finishReason?: string; index: number }[];
  usageMetadata?: object;
  modelVersion: string;
};

/** Translates a chunk sequence; every chunk must be a valid GenerateContentResponse with no SSE event name. */
function translate(chunks: Record<string, unknown>[], usage?: UsageReport | null): Chunk[] {
  const stream = createChatToGenerateContentStream({ publicModel: "gemini-public" });
  const events = parseFrames([...chunks.flatMap((c) => stream.push(c)), ...stream.end(usage)]);
  for (const e of events) {
    expect(e.event).toBeUndefined();
    expect(validateGemini("GenerateContentResponse", e.data)).toEqual([]);
  }
  return events.map((e) => e.data as Chunk);
}

const texts = (chunks: Chunk[]) =>
  chunks.flatMap((c) => c.candidates.flatMap((cand) => cand.content.parts.map((p) => p.text).filter((t) => t !== undefined)));

describe("createChatToGenerateContentStream", () => {
  it("writes a chunk per text delta and a last chunk with finishReason and usage", () => {
    const chunks = translate(textOnly);
    expect(texts(chunks)).toEqual(["Hello", ", world", ""]);
    expect(chunks[0]).toEqual({
      candidates: [{ content: { role: "model", parts: [{ text: "Hello" }] }, index: 0 }],
      modelVersion: "gemini-public",
      responseId: "chatcmpl-AbC123",
    });
    expect(chunks.at(-1)).toEqual({
      candidates: [{ content: { role: "model", parts: [{ text: "" }] }, finishReason: "STOP", index: 0 }],
      usageMetadata: { promptTokenCount: 12, candidatesTokenCount: 3, cachedContentTokenCount: 4, totalTokenCount: 15 },
      modelVersion: "gemini-public",
      responseId: "chatcmpl-AbC123",
    });
    // Only the last chunk completes the stream, and its usage is what the gateway's reader sees.
    expect(chunks.map((c) => geminiSseRules.isComplete!(c))).toEqual([false, false, true]);
    expect(chunks.reduce<UsageReport | null>((u, c) => readGeminiStreamUsage(c, u), null)).toEqual({
      promptTokens: 12,
      completionTokens: 3,
      cachedTokens: 4,
    });
  });

  it("writes a tool call whole, with its arguments joined, in the last chunk", () => {
    const chunks = translate(toolCallSplit);
    expect(texts(chunks)).toEqual(["Let me check."]);
    expect(chunks.at(-1)!.candidates).toEqual([
      {
        content: { role: "model", parts: [{ functionCall: { id: "call_w1", name: "get_weather", args: { city: "Paris" } } }] },
        finishReason: "STOP",
        index: 0,
      },
    ]);
  });

  it("keeps parallel calls in order", () => {
    const last = translate(twoToolCalls).at(-1)!;
    expect(last.candidates[0]!.content.parts).toEqual([
      { functionCall: { id: "call_a", name: "a", args: { x: 1 } } },
      { functionCall: { id: "call_b", name: "b", args: { y: 2 } } },
    ]);
  });

  it("takes usage that arrives alone at the end, or the usage the gateway settles", () => {
    expect(translate(usageOnlyFinal).at(-1)!.usageMetadata).toEqual({ promptTokenCount: 5, candidatesTokenCount: 1, totalTokenCount: 6 });
    expect(translate(textOnly, { promptTokens: 2, completionTokens: 2, cachedTokens: 0 }).at(-1)!.usageMetadata).toEqual({
      promptTokenCount: 2,
      candidatesTokenCount: 2,
      totalTokenCount: 4,
    });
  });

  it("ends an empty answer with one well-formed chunk", () => {
    const chunks = translate(emptyContent);
    expect(chunks).toHaveLength(1);
    expect(chunks[0]!.candidates).toEqual([{ content: { role: "model", parts: [{ text: "" }] }, finishReason: "STOP", index: 0 }]);
    expect(translate([])).toHaveLength(1);
  });

  it("maps finish_reason length to MAX_TOKENS", () => {
    const chunks = translate(lengthFinish);
    expect(texts(chunks).join("")).toBe("Once upon a time");
    expect(chunks.at(-1)!.candidates[0]!.finishReason).toBe("MAX_TOKENS");
  });

  it("keeps candidates apart when the client asked for several", () => {
    const chunks = translate([
      {
        id: "c",
        choices: [
          { index: 0, delta: { content: "A" } },
          { index: 1, delta: { content: "B" } },
        ],
      },
      { id: "c", choices: [{ index: 1, delta: {}, finish_reason: "length" }] },
      { id: "c", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
    ]);
    expect(chunks[0]!.candidates.map((c) => [c.index, c.content.parts])).toEqual([
      [0, [{ text: "A" }]],
      [1, [{ text: "B" }]],
    ]);
    expect(chunks.at(-1)!.candidates.map((c) => [c.index, c.finishReason])).toEqual([
      [0, "STOP"],
      [1, "MAX_TOKENS"],
    ]);
  });

  it("ignores odd chunks and drops calls that never got a name", () => {
    const chunks = translate([
      { id: 5, choices: [null, "x", { delta: { content: ["not", "parts"] } }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { arguments: "{}" } }, null] } }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 1, function: { name: "late" } }] } }] },
      { choices: [{ index: 0, delta: { tool_calls: [{ index: 1, function: { arguments: '{"a":1}' } }] } }], usage: { prompt_tokens: -1 } },
    ]);
    expect(chunks.at(-1)!.candidates[0]!.content.parts).toEqual([{ functionCall: { name: "late", args: { a: 1 } } }]);
    expect(chunks.at(-1)).not.toHaveProperty("usageMetadata");
  });
});
