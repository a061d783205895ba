import { describe, expect, it } from "vitest";
import { z } from "zod";
import { anthropicMessagesRequestSchema } from "../../src/providers/anthropic/messages-request-schema.js";

const base = { model: "claude-x", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };

/** The error paths, as dotted strings. */
function errors(body: unknown): string[] {
  const result = anthropicMessagesRequestSchema.safeParse(body);
  return result.success ? [] : result.error.issues.map((i) => i.path.join("."));
}

describe("anthropicMessagesRequestSchema", () => {
  it("accepts a full request and keeps unknown fields for a native passthrough", () => {
    const body = {
      ...base,
      system: [{ type: "text", text: "Be brief.", cache_control: { type: "ephemeral" } }],
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Weather?" },
            { type: "image", source: { type: "url", url: "https://x/y.png" } },
          ],
        },
        {
          role: "assistant",
          content: [
            { type: "thinking", thinking: "…", signature: "s" },
            { type: "tool_use", id: "toolu_1", name: "w", input: {} },
          ],
        },
        {
          role: "user",
          content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "sunny" }], is_error: false }],
        },
      ],
      tools: [
        { name: "w", input_schema: { type: "object" } },
        { type: "web_search_20250305", name: "web_search", max_uses: 2 },
      ],
      tool_choice: { type: "auto", disable_parallel_tool_use: true },
      thinking: { type: "enabled", budget_tokens: 1024 },
      metadata: { user_id: "u-1" },
    };
    const parsed = anthropicMessagesRequestSchema.parse(body);
    expect(parsed).toEqual(body);
  });

  it("names the missing required fields", () => {
    expect(errors({})).toEqual(["model", "max_tokens", "messages"]);
  });

  it.each([
    [{ ...base, model: 5 }, "model"],
    [{ ...base, model: "" }, "model"],
    [{ ...base, max_tokens: 0 }, "max_tokens"],
    [{ ...base, max_tokens: 1.5 }, "max_tokens"],
    [{ ...base, max_tokens: "100" }, "max_tokens"],
    [{ ...base, messages: [] }, "messages"],
    [{ ...base, messages: "hi" }, "messages"],
    [{ ...base, messages: [null] }, "messages.0"],
    [{ ...base, messages: [{ role: "system", content: "x" }] }, "messages.0.role"],
    [{ ...base, messages: [{ role: "user" }] }, "messages.0.content"],
    [{ ...base, messages: [{ role: "user", content: 42 }] }, "messages.0.content"],
    [{ ...base, messages: [{ role: "user", content: [{ text: "no type" }] }] }, "messages.0.content.0.type"],
    [{ ...base, messages: [{ role: "user", content: [{ type: "text", text: ["x"] }] }] }, "messages.0.content.0.text"],
    [
      { ...base, messages: [{ role: "user", content: [{ type: "image", source: { type: "base64", data: "AAAA" } }] }] },
      "messages.0.content.0.source.media_type",
    ],
    [
      { ...base, messages: [{ role: "assistant", content: [{ type: "tool_use", id: "t", name: "n", input: "{}" }] }] },
      "messages.0.content.0.input",
    ],
    [{ ...base, messages: [{ role: "user", content: [{ type: "tool_result", content: "x" }] }] }, "messages.0.content.0.tool_use_id"],
    [
      { ...base, messages: [{ role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: [{ type: "text" }] }] }] },
      "messages.0.content.0.content.0.text",
    ],
    [{ ...base, system: 7 }, "system"],
    [{ ...base, system: [{ type: "image" }] }, "system.0.type"],
    [{ ...base, temperature: 1.5 }, "temperature"],
    [{ ...base, stop_sequences: "END" }, "stop_sequences"],
    [{ ...base, stream: "yes" }, "stream"],
    [{ ...base, tools: [{ name: "t" }] }, "tools.0.input_schema"],
    [{ ...base, tools: [{ input_schema: {} }] }, "tools.0.name"],
    [{ ...base, tool_choice: { type: "tool" } }, "tool_choice.name"],
    [{ ...base, tool_choice: { type: "sometimes" } }, "tool_choice.type"],
  ])("rejects %j at %s", (body, path) => {
    expect(errors(body)).toContain(path);
  });

  it("accepts block, source and tool kinds it does not know, and empty content arrays", () => {
    const body = {
      ...base,
      messages: [
        {
          role: "user",
          content: [
            { type: "document", source: { type: "text", media_type: "text/plain", data: "doc" } },
            { type: "image", source: { type: "file", file_id: "f" } },
          ],
        },
        { role: "assistant", content: [] },
      ],
      tools: [{ type: "bash_20250124", name: "bash" }],
    };
    expect(errors(body)).toEqual([]);
  });

  it("gives readable messages", () => {
    const result = anthropicMessagesRequestSchema.safeParse({ ...base, messages: [{ role: "user", content: 42 }] });
    expect(z.prettifyError(result.error!)).toContain("content must be a string or an array of content blocks");
  });
});
