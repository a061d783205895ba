import { describe, expect, it } from "vitest";
import { convertMessagesToChat } from "../../src/providers/anthropic/convert-messages-to-chat.js";
import { anthropicMessagesRequestSchema } from "../../src/providers/anthropic/messages-request-schema.js";
import { validateOpenAI } from "../helpers/openapi.js";

/** Parses like the route will, converts, and checks the result against the reference's chat request. */
function convert(body: Record<string, unknown>) {
  const chat = convertMessagesToChat(anthropicMessagesRequestSchema.parse({ model: "claude-x", max_tokens: 256, ...body }));
  expect(validateOpenAI("CreateChatCompletionRequest", chat)).toEqual([]);
  return chat;
}

describe("convertMessagesToChat", () => {
  it("is checked against a reference schema that bites", () => {
    expect(validateOpenAI("CreateChatCompletionRequest", { model: "m", messages: [{ role: "tool", content: "x" }] })).not.toEqual([]);
  });

  it("maps the scalar fields and drops those chat has no counterpart for", () => {
    const chat = convert({
      messages: [{ role: "user", content: "Hi" }],
      temperature: 0.3,
      top_p: 0.9,
      top_k: 40,
      stop_sequences: ["END", "STOP"],
      metadata: { user_id: "u" },
      thinking: { type: "enabled", budget_tokens: 2000 },
      service_tier: "auto",
    });
    expect(chat).toEqual({
      model: "claude-x",
      messages: [{ role: "user", content: "Hi" }],
      max_tokens: 256,
      temperature: 0.3,
      top_p: 0.9,
      stop: ["END", "STOP"],
    });
  });

  it("turns a string system or its text blocks into one system message", () => {
    expect(convert({ system: "Be brief.", messages: [{ role: "user", content: "x" }] }).messages[0]).toEqual({
      role: "system",
      content: "Be brief.",
    });
    const blocks = convert({
      system: [
        { type: "text", text: "A" },
        { type: "text", text: "B", cache_control: { type: "ephemeral" } },
      ],
      messages: [{ role: "user", content: "x" }],
    });
    expect(blocks.messages[0]).toEqual({ role: "system", content: "A\n\nB" });
    expect(convert({ system: [], messages: [{ role: "user", content: "x" }] }).messages).toEqual([{ role: "user", content: "x" }]);
  });

  it("turns images into image_url parts: base64 as data URLs, URLs as they are", () => {
    const chat = convert({
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Compare" },
            { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
            { type: "image", source: { type: "url", url: "https://example.com/a.jpg" } },
            { type: "image", source: { type: "file", file_id: "file_1" } },
          ],
        },
      ],
    });
    expect(chat.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "Compare" },
          { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
          { type: "image_url", image_url: { url: "https://example.com/a.jpg" } },
        ],
      },
    ]);
  });

  it("maps a tool round trip: tool_use to tool_calls, tool_result to tool messages placed first", () => {
    const chat = convert({
      messages: [
        { role: "user", content: "Weather in Paris and Rome?" },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Checking." },
            { type: "tool_use", id: "toolu_1", name: "get_weather", input: { city: "Paris" } },
            { type: "tool_use", id: "toolu_2", name: "get_weather", input: { city: "Rome" } },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_1", content: "sunny" },
            {
              type: "tool_result",
              tool_use_id: "toolu_2",
              content: [
                { type: "text", text: "rain" },
                { type: "text", text: "12°C" },
              ],
              is_error: false,
            },
            { type: "text", text: "Thanks" },
          ],
        },
      ],
    });
    expect(chat.messages).toEqual([
      { role: "user", content: "Weather in Paris and Rome?" },
      {
        role: "assistant",
        content: "Checking.",
        tool_calls: [
          { id: "toolu_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
          { id: "toolu_2", type: "function", function: { name: "get_weather", arguments: '{"city":"Rome"}' } },
        ],
      },
      { role: "tool", tool_call_id: "toolu_1", content: "sunny" },
      { role: "tool", tool_call_id: "toolu_2", content: "rain\n\n12°C" },
      { role: "user", content: "Thanks" },
    ]);
  });

  it("gives an assistant turn of tool calls only a null content, and moves tool-result images to a user message", () => {
    const chat = convert({
      messages: [
        { role: "user", content: "Screenshot?" },
        { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "shot", input: {} }] },
        {
          role: "user",
          content: [
            {
              type: "tool_result",
              tool_use_id: "t1",
              content: [{ type: "image", source: { type: "base64", media_type: "image/jpeg", data: "/9j/" } }],
            },
            { type: "tool_result", tool_use_id: "t2" },
          ],
        },
      ],
    });
    expect(chat.messages.slice(1)).toEqual([
      { role: "assistant", content: null, tool_calls: [{ id: "t1", type: "function", function: { name: "shot", arguments: "{}" } }] },
      { role: "tool", tool_call_id: "t1", content: "" },
      { role: "tool", tool_call_id: "t2", content: "" },
      { role: "user", content: [{ type: "image_url", image_url: { url: "data:image/jpeg;base64,/9j/" } }] },
    ]);
  });

  it("maps custom tools and every tool_choice; server tools are dropped", () => {
    const tools = [
      {
        name: "get_weather",
        description: "Weather by city",
        input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
      },
      { type: "custom", name: "noop", input_schema: { type: "object" } },
      { type: "web_search_20250305", name: "web_search" },
    ];
    const chat = convert({
      messages: [{ role: "user", content: "x" }],
      tools,
      tool_choice: { type: "any", disable_parallel_tool_use: true },
    });
    expect(chat.tools).toEqual([
      { type: "function", function: { name: "get_weather", description: "Weather by city", parameters: tools[0]!.input_schema } },
      { type: "function", function: { name: "noop", parameters: { type: "object" } } },
    ]);
    expect(chat.tool_choice).toBe("required");
    expect(chat.parallel_tool_calls).toBe(false);
    const choice = (tool_choice: object) => convert({ messages: [{ role: "user", content: "x" }], tools, tool_choice }).tool_choice;
    expect(choice({ type: "auto" })).toBe("auto");
    expect(choice({ type: "none" })).toBe("none");
    expect(choice({ type: "tool", name: "get_weather" })).toEqual({ type: "function", function: { name: "get_weather" } });
  });

  it("sends no tool_choice when no tool has a chat form", () => {
    const chat = convert({
      messages: [{ role: "user", content: "x" }],
      tools: [{ type: "bash_20250124", name: "bash" }],
      tool_choice: { type: "any" },
    });
    expect(chat).not.toHaveProperty("tools");
    expect(chat).not.toHaveProperty("tool_choice");
  });

  it("streams, leaving usage to the adapter (which knows whether the provider takes stream_options)", () => {
    const chat = convert({ messages: [{ role: "user", content: "x" }], stream: true });
    expect(chat).toMatchObject({ stream: true });
    expect(chat).not.toHaveProperty("stream_options");
    expect(convert({ messages: [{ role: "user", content: "x" }], stream: false })).not.toHaveProperty("stream");
  });

  it("drops unknown, thinking and empty content instead of failing", () => {
    const chat = convert({
      messages: [
        {
          role: "user",
          content: [
            { type: "document", source: { type: "text", data: "x" } },
            { type: "text", text: "Read this" },
          ],
        },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "hmm", signature: "s" },
            { type: "redacted_thinking", data: "x" },
          ],
        },
        { role: "assistant", content: [] },
        { role: "user", content: [{ type: "search_result", source: "x" }] },
        { role: "assistant", content: "" },
      ],
    });
    expect(chat.messages).toEqual([
      { role: "user", content: "Read this" },
      { role: "assistant", content: "" },
    ]);
  });
});
