import { describe, expect, it } from "vitest";
import { geminiGenerateContentRequestSchema } from "../../src/providers/gemini/generate-content-request-schema.js";

const contents = [{ role: "user", parts: [{ text: "hi" }] }];

function errors(body: unknown): string[] {
  const result = geminiGenerateContentRequestSchema.safeParse(body);
  return result.success ? [] : result.error.issues.map((i) => i.path.join("."));
}

describe("geminiGenerateContentRequestSchema", () => {
  it("accepts a full request and keeps unknown fields", () => {
    const body = {
      contents: [
        { role: "user", parts: [{ text: "Weather?" }, { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } }] },
        { role: "model", parts: [{ functionCall: { name: "w", args: { city: "Paris" } }, thoughtSignature: "c2ln" }] },
        { role: "user", parts: [{ functionResponse: { name: "w", response: { temp: 21 } } }] },
      ],
      systemInstruction: { parts: [{ text: "Be brief." }] },
      tools: [{ functionDeclarations: [{ name: "w", parameters: { type: "OBJECT" } }] }, { googleSearch: {} }],
      toolConfig: { functionCallingConfig: { mode: "ANY", allowedFunctionNames: ["w"] } },
      generationConfig: { maxOutputTokens: 100, temperature: 0.5, thinkingConfig: { thinkingBudget: 0 } },
      safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" }],
    };
    expect(geminiGenerateContentRequestSchema.parse(body)).toEqual(body);
  });

  it("reads snake_case field names and a lone object for a list, as Google's parsers do", () => {
    const parsed = geminiGenerateContentRequestSchema.parse({
      contents: { parts: { text: "hi" } },
      system_instruction: { parts: { text: "sys" } },
      generation_config: { max_output_tokens: 5, stop_sequences: ["x"] },
      tools: [{ function_declarations: [{ name: "f", parameters: { type: "object", properties: { snake_name: { type: "string" } } } }] }],
    });
    expect(parsed).toEqual({
      contents: [{ parts: [{ text: "hi" }] }],
      systemInstruction: { parts: [{ text: "sys" }] },
      generationConfig: { maxOutputTokens: 5, stopSequences: ["x"] },
      tools: [{ functionDeclarations: [{ name: "f", parameters: { type: "object", properties: { snake_name: { type: "string" } } } }] }],
    });
  });

  it("names the missing contents", () => {
    expect(errors({})).toEqual(["contents"]);
    expect(errors({ contents: [] })).toEqual(["contents"]);
  });

  it.each([
    [{ contents: "hi" }, "contents"],
    [{ contents: [null] }, "contents.0"],
    [{ contents: [{ parts: [] }] }, "contents.0.parts"],
    [{ contents: [{ role: "system", parts: [{ text: "x" }] }] }, "contents.0.role"],
    [{ contents: [{ parts: [{ text: 5 }] }] }, "contents.0.parts.0.text"],
    [{ contents: [{ parts: [{ inlineData: { mimeType: "image/png" } }] }] }, "contents.0.parts.0.inlineData.data"],
    [{ contents: [{ parts: [{ functionCall: { args: {} } }] }] }, "contents.0.parts.0.functionCall.name"],
    [{ contents: [{ parts: [{ functionResponse: { name: "f", response: "ok" } }] }] }, "contents.0.parts.0.functionResponse.response"],
    [{ contents, generationConfig: { maxOutputTokens: 0 } }, "generationConfig.maxOutputTokens"],
    [{ contents, generation_config: { temperature: "hot" } }, "generationConfig.temperature"],
    [{ contents, generationConfig: { candidateCount: 0 } }, "generationConfig.candidateCount"],
    [{ contents, systemInstruction: "be brief" }, "systemInstruction"],
    [{ contents, tools: [{ functionDeclarations: [{ description: "x" }] }] }, "tools.0.functionDeclarations.0.name"],
    [{ contents, toolConfig: { functionCallingConfig: { mode: "SOMETIMES" } } }, "toolConfig.functionCallingConfig.mode"],
  ])("rejects %j at %s", (body, path) => {
    expect(errors(body)).toContain(path);
  });

  it("accepts part kinds it does not convert", () => {
    expect(errors({ contents: [{ parts: [{ executableCode: { language: "PYTHON", code: "1" } }, { videoMetadata: {} }, {}] }] })).toEqual(
      [],
    );
  });

  it("does not let a __proto__ key reach an object's prototype", () => {
    const body = JSON.parse('{"contents":[{"parts":[{"text":"x"}]}],"__proto__":{"polluted":true}}') as unknown;
    const parsed = geminiGenerateContentRequestSchema.parse(body) as Record<string, unknown>;
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
