import { describe, expect, it } from "vitest";
import { convertChatRequestToGemini } from "../../src/providers/gemini/convert-chat-request-to-gemini.js";
import { chatTranslationSchema } from "../../src/providers/openai/chat-translation-schema.js";
import { validate } from "../../src/server/body.js";
import { GatewayError } from "../../src/errors.js";
import { validateGemini } from "../helpers/gemini-proto.js";
import { validateOpenAI } from "../helpers/openapi.js";

/**
 * The client body must be a valid OpenAI request (`modalities` with "image" is the image vendors' extension the
 * reference does not list); the translation must be a valid proto GenerateContentRequest.
 */
function convert(body: Record<string, unknown>) {
  const request = { model: "gemini-public", ...body };
  const reference = body.modalities ? { ...request, modalities: ["text"] } : request;
  expect(validateOpenAI("CreateChatCompletionRequest", reference)).toEqual([]);
  const gemini = convertChatRequestToGemini(chatTranslationSchema.parse(request));
  expect(validateGemini("GenerateContentRequest", gemini)).toEqual([]);
  return gemini;
}

/** The 400 the route answers for a body the translation refuses. */
function refusal(body: Record<string, unknown>) {
  try {
    validate(chatTranslationSchema, { model: "m", ...body });
  } catch (err) {
    expect(err).toBeInstanceOf(GatewayError);
    const e = err as GatewayError;
    return { status: e.status, param: e.param, message: e.message };
  }
  throw new Error("accepted");
}

const user = (content: unknown) => ({ role: "user", content });

describe("convertChatRequestToGemini", () => {
  it("maps system and developer messages to systemInstruction and the turns to user/model contents", () => {
    const gemini = convert({
      messages: [
        { role: "system", content: "Be brief." },
        { role: "developer", content: [{ type: "text", text: "Be kind." }] },
        user("Hi"),
        { role: "assistant", content: "Hello!" },
        user([
          { type: "text", text: "And " },
          { type: "text", text: "bye" },
        ]),
      ],
    });
    expect(gemini).toEqual({
      systemInstruction: { parts: [{ text: "Be brief." }, { text: "Be kind." }] },
      contents: [
        { role: "user", parts: [{ text: "Hi" }] },
        { role: "model", parts: [{ text: "Hello!" }] },
        { role: "user", parts: [{ text: "And " }, { text: "bye" }] },
      ],
    });
  });

  it("sends data: URIs as inlineData and http(s) links as fileData; audio and inline files as inlineData", () => {
    const gemini = convert({
      messages: [
        user([
          { type: "text", text: "What is this?" },
          { type: "image_url", image_url: { url: "data:image/PNG;base64,iVBORw0KGgo=", detail: "high" } },
          { type: "image_url", image_url: { url: "https://example.com/cat.jpg" } },
          { type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } },
          { type: "file", file: { file_data: "data:application/pdf;base64,JVBERi0=", filename: "a.pdf" } },
          { type: "file", file: { file_id: "file-abc" } },
        ]),
      ],
    });
    expect(gemini.contents).toEqual([
      {
        role: "user",
        parts: [
          { text: "What is this?" },
          { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } },
          { fileData: { fileUri: "https://example.com/cat.jpg" } },
          { inlineData: { mimeType: "audio/wav", data: "UklGRg==" } },
          { inlineData: { mimeType: "application/pdf", data: "JVBERi0=" } },
        ],
      },
    ]);
  });

  it("round-trips tool calls: calls become functionCall parts, results functionResponse parts named after their call", () => {
    const gemini = convert({
      messages: [
        user("Weather in Paris and Rome?"),
        {
          role: "assistant",
          content: null,
          tool_calls: [
            { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
            {
              id: "call_2",
              type: "function",
              function: { name: "get_time", arguments: "not json" },
              extra_content: { google: { thought_signature: "c2lnbmF0dXJl" } },
            },
          ],
        },
        { role: "tool", tool_call_id: "call_2", content: "12:00" },
        { role: "tool", tool_call_id: "call_1", content: [{ type: "text", text: '{"temp":21}' }] },
        user("Thanks"),
      ],
      tools: [
        {
          type: "function",
          function: {
            name: "get_weather",
            description: "Weather of a city",
            parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
            strict: true,
          },
        },
        { type: "function", function: { name: "get_time" } },
        { type: "custom", custom: { name: "grammar_tool" } },
      ],
      tool_choice: "auto",
      parallel_tool_calls: false,
    });
    expect(gemini.contents).toEqual([
      { role: "user", parts: [{ text: "Weather in Paris and Rome?" }] },
      {
        role: "model",
        parts: [
          { functionCall: { name: "get_weather", args: { city: "Paris" } } },
          { functionCall: { name: "get_time", args: {} }, thoughtSignature: "c2lnbmF0dXJl" },
        ],
      },
      {
        role: "user",
        parts: [
          { functionResponse: { name: "get_time", response: { output: "12:00" } } },
          { functionResponse: { name: "get_weather", response: { temp: 21 } } },
          { text: "Thanks" },
        ],
      },
    ]);
    expect(gemini.tools).toEqual([
      {
        functionDeclarations: [
          {
            name: "get_weather",
            description: "Weather of a city",
            parametersJsonSchema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
          },
          { name: "get_time" },
        ],
      },
    ]);
    expect(gemini.toolConfig).toEqual({ functionCallingConfig: { mode: "AUTO" } });
  });

  it.each([
    ["none", { mode: "NONE" }],
    ["required", { mode: "ANY" }],
    [
      { type: "function", function: { name: "f" } },
      { mode: "ANY", allowedFunctionNames: ["f"] },
    ],
    [
      { type: "allowed_tools", allowed_tools: { mode: "auto", tools: [{ type: "function", function: { name: "f" } }] } },
      { mode: "VALIDATED", allowedFunctionNames: ["f"] },
    ],
    [
      { type: "allowed_tools", allowed_tools: { mode: "required", tools: [{ type: "function", function: { name: "f" } }] } },
      { mode: "ANY", allowedFunctionNames: ["f"] },
    ],
  ])("tool_choice %j → functionCallingConfig %j", (toolChoice, config) => {
    const tools = [{ type: "function", function: { name: "f" } }];
    expect(convert({ messages: [user("x")], tools, tool_choice: toolChoice }).toolConfig).toEqual({ functionCallingConfig: config });
  });

  it("leaves toolConfig out when no function tool remains", () => {
    const gemini = convert({ messages: [user("x")], tool_choice: "required" });
    expect(gemini).not.toHaveProperty("tools");
    expect(gemini).not.toHaveProperty("toolConfig");
  });

  it("maps the generation fields; drops what Gemini cannot express", () => {
    const gemini = convert({
      messages: [user("x")],
      max_tokens: 10,
      max_completion_tokens: 50,
      temperature: 1.5,
      top_p: 0.9,
      stop: "END",
      n: 2,
      seed: 7,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      logprobs: true,
      top_logprobs: 2,
      logit_bias: { "50256": -100 },
      user: "u-1",
      reasoning_effort: "low",
      service_tier: "auto",
      store: false,
      metadata: { a: "b" },
    });
    expect(gemini.generationConfig).toEqual({
      maxOutputTokens: 50,
      temperature: 1.5,
      topP: 0.9,
      stopSequences: ["END"],
      candidateCount: 2,
      seed: 7,
      presencePenalty: 0.5,
      frequencyPenalty: -0.5,
    });
    expect(Object.keys(gemini).sort()).toEqual(["contents", "generationConfig"]);
    expect(convert({ messages: [user("x")], n: 1, max_tokens: 5 }).generationConfig).toEqual({ maxOutputTokens: 5 });
    expect(convert({ messages: [user("x")] })).not.toHaveProperty("generationConfig");
  });

  it("maps response_format and modalities", () => {
    const schema = { type: "object", properties: { a: { type: "integer" } } };
    expect(
      convert({ messages: [user("x")], response_format: { type: "json_schema", json_schema: { name: "r", schema, strict: true } } })
        .generationConfig,
    ).toEqual({ responseMimeType: "application/json", responseJsonSchema: schema });
    expect(convert({ messages: [user("x")], response_format: { type: "json_object" } }).generationConfig).toEqual({
      responseMimeType: "application/json",
    });
    expect(convert({ messages: [user("x")], response_format: { type: "text" } })).not.toHaveProperty("generationConfig");
    expect(convert({ messages: [user("x")], modalities: ["text", "image"] }).generationConfig).toEqual({
      responseModalities: ["TEXT", "IMAGE"],
    });
    expect(convert({ messages: [user("x")], modalities: ["text", "audio"] }).generationConfig).toEqual({ responseModalities: ["TEXT"] });
  });

  it("leaves out empty turns and unknown roles; a refusal is the model's text", () => {
    const gemini = convert({
      messages: [
        user("x"),
        { role: "assistant", content: "" },
        { role: "assistant", content: [{ type: "refusal", refusal: "I can't." }] },
        { role: "function", name: "f", content: "legacy" },
        user([{ type: "file", file: { file_id: "file-abc" } }]),
      ],
    });
    expect(gemini.contents).toEqual([
      { role: "user", parts: [{ text: "x" }] },
      { role: "model", parts: [{ text: "I can't." }] },
    ]);
  });
});

describe("chatTranslationSchema refuses what cannot be translated, naming the field", () => {
  it.each([
    [{ messages: [user(5)] }, "messages[0].content", /string or an array/],
    [{ messages: [user([{ type: "text", text: 1 }])] }, "messages[0].content[0].text", /string/],
    [
      { messages: [user([{ type: "image_url", image_url: { url: "ftp://x/y.png" } }])] },
      "messages[0].content[0].image_url.url",
      /data: URI/,
    ],
    [
      { messages: [user([{ type: "image_url", image_url: { url: "data:image/png,abc" } }])] },
      "messages[0].content[0].image_url.url",
      /base64/,
    ],
    [
      { messages: [user([{ type: "file", file: { file_data: "https://x/a.pdf" } }])] },
      "messages[0].content[0].file.file_data",
      /data: URI/,
    ],
    [{ messages: [user("x"), { role: "tool", tool_call_id: "call_9", content: "r" }] }, "messages[1].tool_call_id", /earlier assistant/],
    [{ messages: [{ role: "system", content: "only" }] }, "messages", /user, assistant or tool/],
    [{ messages: [user("x")], tools: [{ type: "function", function: { description: "no name" } }] }, "tools[0].function.name", /string/],
    [{ messages: [user("x")], tool_choice: "sometimes" }, "tool_choice", /./],
    [{ messages: [user("x")], temperature: 3 }, "temperature", /2/],
    [{ messages: [user("x")], stop: 5 }, "stop", /./],
    [
      { messages: [user("x")], response_format: { type: "json_schema", json_schema: { schema: {} } } },
      "response_format.json_schema.name",
      /./,
    ],
  ])("%j → 400 on %s", (body, param, message) => {
    const r = refusal(body);
    expect(r.status).toBe(400);
    expect(r.param).toBe(param);
    expect(r.message).toMatch(message);
  });
});
