import { describe, expect, it } from "vitest";
import { convertChatToMessage, messageIdFromChatId } from "../../src/providers/anthropic/convert-chat-to-message.js";
import { mapChatFinishReason } from "../../src/providers/anthropic/map-anthropic-finish-reason.js";
import { parseToolArguments } from "../../src/providers/openai/read-chat-completion.js";
import { validateAnthropic } from "../helpers/openapi.js";

const completion = (message: Record<string, unknown>, finish: string | null = "stop", extra: Record<string, unknown> = {}) => ({
  id: "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
  object: "chat.completion",
  created: 1_741_569_952,
  model: "gpt-4o-2024-08-06",
  choices: [
    { index: 0, message: { role: "assistant", refusal: null, annotations: [], ...message }, logprobs: null, finish_reason: finish },
  ],
  usage: { prompt_tokens: 19, completion_tokens: 10, total_tokens: 29, prompt_tokens_details: { cached_tokens: 4, audio_tokens: 0 } },
  ...extra,
});

function convert(body: Record<string, unknown>, usage?: Parameters<typeof convertChatToMessage>[1]["usage"]) {
  const message = convertChatToMessage(
    body,
    usage === undefined ? { publicModel: "claude-public" } : { publicModel: "claude-public", usage },
  );
  expect(validateAnthropic("Message", message)).toEqual([]);
  return message;
}

describe("convertChatToMessage", () => {
  it("is checked against a reference schema that bites", () => {
    expect(validateAnthropic("Message", { id: "msg_1", type: "message" })).not.toEqual([]);
  });

  it("maps a text answer with the public model and usage in Anthropic's terms", () => {
    expect(convert(completion({ content: "Hello there." }))).toEqual({
      id: "msg_B9MBs8CjcvOU2jLn4n570S5qMJKcT",
      type: "message",
      role: "assistant",
      content: [{ type: "text", text: "Hello there.", citations: null }],
      model: "claude-public",
      stop_reason: "end_turn",
      stop_sequence: null,
      stop_details: null,
      container: null,
      usage: {
        input_tokens: 15,
        output_tokens: 10,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 4,
        cache_creation: null,
        inference_geo: null,
        server_tool_use: null,
        service_tier: null,
      },
    });
  });

  it("maps tool calls to tool_use blocks with parsed input", () => {
    const message = convert(
      completion(
        {
          content: null,
          tool_calls: [
            { id: "call_abc", type: "function", function: { name: "get_weather", arguments: '{"city":"Paris"}' } },
            { id: "call with spaces", type: "function", function: { name: "noop", arguments: "" } },
          ],
        },
        "tool_calls",
      ),
    );
    expect(message.stop_reason).toBe("tool_use");
    expect(message.content).toEqual([
      { type: "tool_use", id: "call_abc", name: "get_weather", input: { city: "Paris" }, caller: { type: "direct" } },
      { type: "tool_use", id: "toolu_B9MBs8CjcvOU2jLn4n570S5qMJKcT_1", name: "noop", input: {}, caller: { type: "direct" } },
    ]);
  });

  it("reads arguments that are not a JSON object as an empty input", () => {
    expect(parseToolArguments('{"a":1')).toEqual({});
    expect(parseToolArguments("[1,2]")).toEqual({});
    expect(parseToolArguments("null")).toEqual({});
    expect(parseToolArguments(42)).toEqual({});
    expect(parseToolArguments({ already: "object" })).toEqual({ already: "object" });
    const message = convert(
      completion({ content: "", tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{oops" } }] }, "tool_calls"),
    );
    expect(message.content).toEqual([{ type: "tool_use", id: "c1", name: "f", input: {}, caller: { type: "direct" } }]);
  });

  it("keeps text before tool calls, a refusal as text, and a legacy function_call", () => {
    expect(
      convert(
        completion(
          { content: "Sure.", tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: "{}" } }] },
          "tool_calls",
        ),
      ).content,
    ).toHaveLength(2);
    expect(convert(completion({ content: null, refusal: "I can't help with that." })).content).toEqual([
      { type: "text", text: "I can't help with that.", citations: null },
    ]);
    const legacy = convert(completion({ content: null, function_call: { name: "f", arguments: '{"x":1}' } }, "function_call"));
    expect(legacy.content).toEqual([
      { type: "tool_use", id: "toolu_B9MBs8CjcvOU2jLn4n570S5qMJKcT_0", name: "f", input: { x: 1 }, caller: { type: "direct" } },
    ]);
    expect(legacy.stop_reason).toBe("tool_use");
  });

  it.each([
    ["stop", "end_turn"],
    ["length", "max_tokens"],
    ["tool_calls", "tool_use"],
    ["function_call", "tool_use"],
    ["content_filter", "refusal"],
    [null, "end_turn"],
    ["something_new", "end_turn"],
  ])("maps finish_reason %s to %s", (finish, stop) => {
    expect(mapChatFinishReason(finish)).toBe(stop);
    expect(convert(completion({ content: "x" }, finish)).stop_reason).toBe(stop);
  });

  it("takes the usage the gateway settles over the completion's, and zero when there is none", () => {
    expect(convert(completion({ content: "x" }), { promptTokens: 100, completionTokens: 7, cachedTokens: 60 }).usage).toMatchObject({
      input_tokens: 40,
      cache_read_input_tokens: 60,
      output_tokens: 7,
    });
    expect(convert(completion({ content: "x" }, "stop", { usage: undefined }), null).usage).toMatchObject({
      input_tokens: 0,
      output_tokens: 0,
    });
  });

  it("survives odd upstream answers", () => {
    for (const odd of [
      {},
      { choices: [] },
      { choices: [null] },
      { choices: [{ message: "text" }] },
      { id: 5, choices: [{ message: { content: [{ type: "text", text: "parts" }], tool_calls: [null, { function: {} }] } }] },
    ]) {
      const message = convert(odd);
      expect(message.id).toMatch(/^msg_[A-Za-z0-9_-]+$/);
    }
    expect(
      convert({
        choices: [
          {
            message: {
              content: [
                { type: "text", text: "a" },
                { type: "text", text: "b" },
              ],
            },
          },
        ],
      }).content,
    ).toEqual([{ type: "text", text: "ab", citations: null }]);
  });

  it("derives message ids from chat ids", () => {
    expect(messageIdFromChatId("chatcmpl-xyz")).toBe("msg_xyz");
    expect(messageIdFromChatId("gen-1/2:3")).toBe("msg_gen-123");
    expect(messageIdFromChatId("")).toMatch(/^msg_[0-9a-f]{32}$/);
  });
});
