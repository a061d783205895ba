import { describe, expect, it } from "vitest";
import { createChatToMessagesStream } from "../../src/providers/anthropic/chat-to-messages-stream.js";
import type { UsageReport } from "../../src/providers/types.js";
import { emptyContent, lengthFinish, textOnly, toolCallSplit, twoToolCalls, usageOnlyFinal } from "../fixtures/chat-stream-chunks.js";
import { validateAnthropic } from "../helpers/openapi.js";
import { parseFrames } from "../helpers/sse-frames.js";

type Event = { event: string | undefined; data: Record<string, unknown> };

/** Translates a whole chunk sequence, checking every event against the reference and its SSE name. */
function translate(chunks: Record<string, unknown>[], usage?: UsageReport | null, promptTokens?: number): Event[] {
  const stream = createChatToMessagesStream({ publicModel: "claude-public", ...(promptTokens === undefined ? {} : { promptTokens }) });
  const frames = [...chunks.flatMap((c) => stream.push(c)), ...stream.end(usage)];
  const events = parseFrames(frames);
  for (const e of events) {
    expect(e.event).toBe(e.data.type);
    expect(validateAnthropic("MessageStreamEvent", e.data), JSON.stringify(e.data)).toEqual([]);
  }
  return events;
}

/** What an SDK builds from the events (the Anthropic SDK's accumulation, reduced to text and tool input). */
function accumulate(events: Event[]) {
  const blocks: Record<string, unknown>[] = [];
  const json: string[] = [];
  let message: Record<string, unknown> = {};
  for (const { data } of events) {
    const index = data.index as number;
    if (data.type === "message_start") message = data.message as Record<string, unknown>;
    if (data.type === "content_block_start") {
      expect(index).toBe(blocks.length);
      blocks.push({ ...(data.content_block as object) });
      json.push("");
    }
    if (data.type === "content_block_delta") {
      const delta = data.delta as Record<string, string>;
      if (delta.type === "text_delta") blocks[index]!.text += delta.text!;
      else json[index] = `${json[index] ?? ""}${delta.partial_json ?? ""}`;
    }
    if (data.type === "content_block_stop" && blocks[index]!.type === "tool_use") blocks[index]!.input = JSON.parse(json[index]! || "{}");
    if (data.type === "message_delta") message = { ...message, ...(data.delta as object), usage: data.usage };
  }
  return { ...message, content: blocks };
}

const types = (events: Event[]) => events.map((e) => e.data.type);

describe("createChatToMessagesStream", () => {
  it("emits the official sequence for a text answer, usage from the final chunk", () => {
    const events = translate(textOnly);
    expect(types(events)).toEqual([
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(events[0]!.data.message).toMatchObject({
      id: "msg_AbC123",
      model: "claude-public",
      content: [],
      stop_reason: null,
      usage: { output_tokens: 0 },
    });
    expect(accumulate(events)).toMatchObject({
      content: [{ type: "text", text: "Hello, world" }],
      stop_reason: "end_turn",
      stop_sequence: null,
      usage: { input_tokens: 8, cache_read_input_tokens: 4, output_tokens: 3 },
    });
  });

  it("streams a tool call split over several chunks as input_json_delta", () => {
    const events = translate(toolCallSplit);
    const message = accumulate(events);
    expect(message).toMatchObject({
      stop_reason: "tool_use",
      content: [
        { type: "text", text: "Let me check." },
        { type: "tool_use", id: "call_w1", name: "get_weather", input: { city: "Paris" } },
      ],
      usage: { input_tokens: 40, output_tokens: 18 },
    });
    const partials = events
      .filter((e) => (e.data.delta as { type?: string } | undefined)?.type === "input_json_delta")
      .map((e) => (e.data.delta as { partial_json: string }).partial_json);
    expect(partials).toEqual(['{"ci', 'ty":"Par', 'is"}']);
  });

  it("gives parallel tool calls one block each, in order", () => {
    const message = accumulate(translate(twoToolCalls));
    expect(message.content).toEqual([
      { type: "tool_use", id: "call_a", name: "a", input: { x: 1 }, caller: { type: "direct" } },
      { type: "tool_use", id: "call_b", name: "b", input: { y: 2 }, caller: { type: "direct" } },
    ]);
  });

  it("puts usage that arrives alone at the end into message_delta", () => {
    const events = translate(usageOnlyFinal, undefined, 5);
    expect(events[0]!.data.message).toMatchObject({ usage: { input_tokens: 5, output_tokens: 0 } });
    expect(events.at(-2)!.data).toMatchObject({ type: "message_delta", usage: { input_tokens: 5, output_tokens: 1 } });
  });

  it("prefers the usage the gateway settles", () => {
    const events = translate(textOnly, { promptTokens: 20, completionTokens: 9, cachedTokens: 0 });
    expect(events.at(-2)!.data.usage).toEqual({
      input_tokens: 20,
      output_tokens: 9,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      server_tool_use: null,
    });
  });

  it("emits a well-formed empty message when there is no content", () => {
    const events = translate(emptyContent);
    expect(types(events)).toEqual(["message_start", "message_delta", "message_stop"]);
    expect(accumulate(events)).toMatchObject({ content: [], stop_reason: "end_turn", usage: { output_tokens: 0 } });
  });

  it("maps finish_reason length to max_tokens", () => {
    expect(accumulate(translate(lengthFinish))).toMatchObject({
      stop_reason: "max_tokens",
      content: [{ type: "text", text: "Once upon a time" }],
    });
  });

  it("closes properly when end() comes first or the stream had no chunks", () => {
    const events = translate([]);
    expect(types(events)).toEqual(["message_start", "message_delta", "message_stop"]);
    expect((events[0]!.data.message as { id: string }).id).toMatch(/^msg_/);
  });

  it("holds a tool call's arguments until its name arrives, and ignores odd chunks", () => {
    const chunks = [
      { id: "x", choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: "call_1", function: { arguments: '{"a"' } }] } }] },
      { id: "x", choices: [{ index: 0, delta: { tool_calls: [{ index: 0, function: { name: "late", arguments: ":1}" } }] } }] },
      { id: "x", choices: "nope" },
      { id: "x", choices: [null, { index: 1, delta: { content: "other choice" } }, { index: 0, delta: { tool_calls: [null, "x"] } }] },
      { id: "x", usage: { prompt_tokens: "bad" } },
      { id: "x", choices: [{ index: 0, delta: { content: 5 }, finish_reason: "tool_calls" }] },
    ];
    const message = accumulate(translate(chunks));
    expect(message).toMatchObject({
      stop_reason: "tool_use",
      content: [{ type: "tool_use", id: "call_1", name: "late", input: { a: 1 } }],
    });
  });

  it("writes frames as `event: NAME` and `data: JSON` lines", () => {
    const stream = createChatToMessagesStream({ publicModel: "p", messageId: "msg_fixed" });
    const [first] = stream.push(textOnly[1]!);
    expect(first).toMatch(/^event: message_start\ndata: \{"type":"message_start","message":\{"id":"msg_fixed",/);
    expect(first!.endsWith("\n\n")).toBe(true);
  });
});
