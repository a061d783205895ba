import { describe, expect, it } from "vitest";
import { convertGeminiSchema } from "../../src/providers/gemini/convert-gemini-schema.js";
import { convertGenerateContentToChat } from "../../src/providers/gemini/convert-generate-content-to-chat.js";
import { geminiGenerateContentRequestSchema } from "../../src/providers/gemini/generate-content-request-schema.js";
import { validateGemini } from "../helpers/gemini-proto.js";
import { validateOpenAI } from "../helpers/openapi.js";

/** The client body must be a valid proto request; the chat request must be valid per OpenAI's reference. */
function convert(body: Record<string, unknown>, stream = false) {
  expect(validateGemini("GenerateContentRequest", body)).toEqual([]);
  const chat = convertGenerateContentToChat(geminiGenerateContentRequestSchema.parse(body), { model: "gemini-public", stream });
  expect(validateOpenAI("CreateChatCompletionRequest", chat)).toEqual([]);
  return chat;
}

const user = (text: string) => ({ role: "user", parts: [{ text }] });

describe("convertGenerateContentToChat", () => {
  it("takes the model from the URL and maps generationConfig", () => {
    const chat = convert({
      contents: [user("Hi")],
      generationConfig: {
        maxOutputTokens: 50,
        temperature: 1.2,
        topP: 0.8,
        topK: 20,
        stopSequences: ["END"],
        candidateCount: 2,
        seed: 7,
        presencePenalty: 0.1,
        frequencyPenalty: 0.2,
      },
      safetySettings: [{ category: "HARM_CATEGORY_HARASSMENT", threshold: "BLOCK_NONE" }],
    });
    expect(chat).toEqual({
      model: "gemini-public",
      messages: [{ role: "user", content: "Hi" }],
      max_tokens: 50,
      temperature: 1.2,
      top_p: 0.8,
      n: 2,
      stop: ["END"],
      seed: 7,
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
    });
    expect(convert({ contents: [user("x")], generationConfig: { candidateCount: 1 } })).not.toHaveProperty("n");
  });

  it("maps systemInstruction and roles; thoughts are dropped", () => {
    const chat = convert({
      systemInstruction: { parts: [{ text: "Be brief." }, { text: "Be kind." }] },
      contents: [
        user("Hi"),
        { role: "model", parts: [{ text: "thinking…", thought: true }, { text: "Hel" }, { text: "lo" }] },
        { parts: [{ text: "Bye" }] },
      ],
    });
    expect(chat.messages).toEqual([
      { role: "system", content: "Be brief.\n\nBe kind." },
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello" },
      { role: "user", content: "Bye" },
    ]);
  });

  it("turns inline images into data URLs and https image files into URLs; other media is dropped", () => {
    const chat = convert({
      contents: [
        {
          role: "user",
          parts: [
            { text: "What is this?" },
            { inlineData: { mimeType: "image/jpeg", data: "/9j/4AAQ" } },
            { fileData: { mimeType: "image/png", fileUri: "https://example.com/x.png" } },
            { fileData: { mimeType: "video/mp4", fileUri: "https://generativelanguage.googleapis.com/v1beta/files/abc" } },
            { inlineData: { mimeType: "audio/wav", data: "UklGR" } },
          ],
        },
      ],
    });
    expect(chat.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "What is this?" },
          { type: "image_url", image_url: { url: "data:image/jpeg;base64,/9j/4AAQ" } },
          { type: "image_url", image_url: { url: "https://example.com/x.png" } },
        ],
      },
    ]);
  });

  it("links function responses to calls by name when there are no ids, and keeps ids when there are", () => {
    const chat = convert({
      contents: [
        user("Weather in Paris and Rome?"),
        {
          role: "model",
          parts: [
            { functionCall: { name: "get_weather", args: { city: "Paris" } } },
            { functionCall: { name: "get_weather", args: { city: "Rome" } } },
            { functionCall: { id: "fc-7", name: "get_time" } },
          ],
        },
        {
          role: "user",
          parts: [
            { functionResponse: { id: "fc-7", name: "get_time", response: { time: "noon" } } },
            { functionResponse: { name: "get_weather", response: { temp: 21 } } },
            { functionResponse: { name: "get_weather", response: { temp: 17 } } },
            { text: "Summarise." },
          ],
        },
      ],
    });
    expect(chat.messages.slice(1)).toEqual([
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "call_0", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
          { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } },
          { id: "fc-7", type: "function", function: { name: "get_time", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "fc-7", content: '{"time":"noon"}' },
      { role: "tool", tool_call_id: "call_0", content: '{"temp":21}' },
      { role: "tool", tool_call_id: "call_1", content: '{"temp":17}' },
      { role: "user", content: "Summarise." },
    ]);
  });

  it("maps function declarations (Gemini schemas become JSON Schema) and every calling mode", () => {
    const body = (mode?: string, allowed?: string[]) => ({
      contents: [user("x")],
      tools: [
        {
          functionDeclarations: [
            {
              name: "get_weather",
              description: "Weather",
              parameters: { type: "OBJECT", properties: { city: { type: "STRING", nullable: true } }, required: ["city"] },
            },
            { name: "raw", parametersJsonSchema: { type: "object", additionalProperties: false } },
            { name: "bare" },
          ],
        },
        { codeExecution: {} },
      ],
      ...(mode ? { toolConfig: { functionCallingConfig: { mode, ...(allowed ? { allowedFunctionNames: allowed } : {}) } } } : {}),
    });
    const chat = convert(body());
    expect(chat.tools).toEqual([
      {
        type: "function",
        function: {
          name: "get_weather",
          description: "Weather",
          parameters: { type: "object", properties: { city: { type: ["string", "null"] } }, required: ["city"] },
        },
      },
      { type: "function", function: { name: "raw", parameters: { type: "object", additionalProperties: false } } },
      { type: "function", function: { name: "bare" } },
    ]);
    expect(chat).not.toHaveProperty("tool_choice");
    expect(convert(body("AUTO")).tool_choice).toBe("auto");
    expect(convert(body("NONE")).tool_choice).toBe("none");
    expect(convert(body("ANY")).tool_choice).toBe("required");
    expect(convert(body("ANY", ["raw"])).tool_choice).toEqual({ type: "function", function: { name: "raw" } });
    expect(
      convert({ contents: [user("x")], tools: [{ googleSearch: {} }], toolConfig: { functionCallingConfig: { mode: "ANY" } } }),
    ).not.toHaveProperty("tool_choice");
  });

  it("maps JSON output: schema, JSON Schema or plain JSON mode", () => {
    const config = (extra: object) =>
      convert({ contents: [user("x")], generationConfig: { responseMimeType: "application/json", ...extra } }).response_format;
    expect(config({})).toEqual({ type: "json_object" });
    expect(config({ responseSchema: { type: "ARRAY", items: { type: "INTEGER" }, maxItems: "3" } })).toEqual({
      type: "json_schema",
      json_schema: { name: "response", schema: { type: "array", items: { type: "integer" }, maxItems: 3 } },
    });
    expect(config({ responseJsonSchema: { type: "object" } })).toEqual({
      type: "json_schema",
      json_schema: { name: "response", schema: { type: "object" } },
    });
    expect(convert({ contents: [user("x")], generationConfig: { responseMimeType: "text/plain" } })).not.toHaveProperty("response_format");
  });

  it("streams when called for streamGenerateContent, leaving usage to the adapter", () => {
    const chat = convert({ contents: [user("x")] }, true);
    expect(chat).toMatchObject({ stream: true });
    expect(chat).not.toHaveProperty("stream_options");
  });

  it("drops parts it cannot convert instead of failing", () => {
    const chat = convert({
      contents: [
        { role: "user", parts: [{ executableCode: { language: "PYTHON", code: "print(1)" } }] },
        { role: "model", parts: [{ text: "only a thought", thought: true }] },
        { role: "user", parts: [{ text: "" }] },
      ],
    });
    expect(chat.messages).toEqual([{ role: "user", content: "" }]);
  });
});

describe("convertGeminiSchema", () => {
  it("lower-cases types, turns nullable into a type list, keeps property names and drops Gemini-only keys", () => {
    expect(
      convertGeminiSchema({
        type: "OBJECT",
        property_ordering: ["b", "a"],
        properties: {
          max_items: { type: "ARRAY", items: { type: "NUMBER", format: "float" }, max_items: "2" },
          a: { anyOf: [{ type: "STRING" }, { type: "TYPE_UNSPECIFIED" }] },
        },
        example: { a: "x" },
        enum: ["x"],
      }),
    ).toEqual({
      type: "object",
      properties: {
        max_items: { type: "array", items: { type: "number", format: "float" }, maxItems: 2 },
        a: { anyOf: [{ type: "string" }, {}] },
      },
      enum: ["x"],
    });
    expect(convertGeminiSchema("nope")).toEqual({});
  });
});
