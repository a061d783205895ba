import { describe, expect, it } from "vitest";
import { convertGeminiUsage, readGeminiStreamUsage } from "../../src/providers/gemini/convert-gemini-usage.js";

describe("convertGeminiUsage", () => {
  it("counts thoughts as output and tool-use prompts as input; cached is part of the prompt", () => {
    expect(
      convertGeminiUsage({
        promptTokenCount: 100,
        cachedContentTokenCount: 60,
        candidatesTokenCount: 20,
        thoughtsTokenCount: 30,
        toolUsePromptTokenCount: 5,
        totalTokenCount: 155,
      }),
    ).toEqual({ promptTokens: 105, completionTokens: 50, cachedTokens: 60 });
  });
  it("reads counts left out of proto3 JSON as zero, except the prompt", () => {
    expect(convertGeminiUsage({ promptTokenCount: 4, totalTokenCount: 4 })).toEqual({
      promptTokens: 4,
      completionTokens: 0,
      cachedTokens: 0,
    });
    expect(convertGeminiUsage({ candidatesTokenCount: 4 })).toBeNull();
  });
  it.each([
    null,
    [],
    "x",
    { promptTokenCount: -1 },
    { promptTokenCount: 1, candidatesTokenCount: "2" },
    { promptTokenCount: 1, thoughtsTokenCount: null },
  ])("gives null for %j", (u) => {
    expect(convertGeminiUsage(u)).toBeNull();
  });
});

describe("readGeminiStreamUsage", () => {
  it("keeps the latest usable usageMetadata", () => {
    let usage = readGeminiStreamUsage({ candidates: [] }, null);
    expect(usage).toBeNull();
    usage = readGeminiStreamUsage({ usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 1 } }, usage);
    usage = readGeminiStreamUsage({ usageMetadata: { promptTokenCount: 5, candidatesTokenCount: 9 } }, usage);
    expect(readGeminiStreamUsage({ usageMetadata: { bogus: true } }, usage)).toEqual({
      promptTokens: 5,
      completionTokens: 9,
      cachedTokens: 0,
    });
  });
});
