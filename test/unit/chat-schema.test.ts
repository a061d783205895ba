import { describe, expect, it } from "vitest";
import { chatRequestSchema, toChatRequest } from "../../src/inference/chat-schema.js";
import { GatewayError } from "../../src/errors.js";

const base = { model: "m1", messages: [{ role: "user", content: "Say hello" }] };

// Bodies around every rule of the schema: each must get the same verdict from the hand check and from zod.
const bodies: unknown[] = [
  base,
  { ...base, max_tokens: 16, stream: true, stream_options: { include_usage: true }, n: 2, tools: [], modalities: ["text"] },
  { ...base, stream: null, stream_options: null, max_tokens: null, max_completion_tokens: null, n: null, tools: null, modalities: null },
  { ...base, temperature: 0.2, response_format: { type: "json_object" }, metadata: { model: "x" } },
  {
    ...base,
    messages: [
      { role: "user", content: [{ type: "text", text: "hi" }], name: "a" },
      { role: "assistant", content: null },
    ],
  },
  { ...base, messages: [{ role: "tool" }] },
  null,
  [],
  "text",
  42,
  {},
  { ...base, model: "" },
  { ...base, model: 7 },
  { ...base, messages: [] },
  { ...base, messages: {} },
  { ...base, messages: [null] },
  { ...base, messages: [[]] },
  { ...base, messages: [{ content: "no role" }] },
  { ...base, messages: [{ role: "" }] },
  { ...base, messages: [{ role: 1 }] },
  { ...base, stream: "true" },
  { ...base, stream: 1 },
  { ...base, stream_options: [] },
  { ...base, stream_options: "yes" },
  { ...base, stream_options: { include_usage: null } },
  { ...base, stream_options: { include_usage: "true" } },
  { ...base, stream_options: { other: 1 } },
  { ...base, max_tokens: 0 },
  { ...base, max_tokens: -1 },
  { ...base, max_tokens: 1.5 },
  { ...base, max_tokens: 10_000_000 },
  { ...base, max_tokens: 10_000_001 },
  { ...base, max_tokens: 2 ** 53 },
  { ...base, max_tokens: "16" },
  { ...base, max_completion_tokens: 0 },
  { ...base, max_completion_tokens: 10_000_001 },
  { ...base, n: 0 },
  { ...base, n: 128 },
  { ...base, n: 129 },
  { ...base, n: 1.5 },
  { ...base, tools: {} },
  { ...base, tools: "none" },
  { ...base, modalities: "text" },
  { ...base, modalities: ["text", 1] },
  JSON.parse('{"model":"m1","messages":[{"role":"user"}],"__proto__":{"model":"x"}}'),
  JSON.parse('{"model":"m1","messages":[{"role":"user","__proto__":{"role":""}}]}'),
  JSON.parse('{"model":"m1","messages":[{"role":"user"}],"stream_options":{"__proto__":null}}'),
];

describe("toChatRequest", () => {
  it.each(bodies.map((body) => [JSON.stringify(body), body]))("agrees with the schema on %s", (_, body) => {
    const expected = chatRequestSchema.safeParse(body);
    if (expected.success) {
      expect(toChatRequest(body)).toEqual(expected.data);
    } else {
      expect(() => toChatRequest(body)).toThrow(GatewayError);
    }
  });

  it("takes an ordinary request as parsed, without a copy", () => {
    const body = { ...base, max_tokens: 16 };
    expect(toChatRequest(body)).toBe(body);
  });

  it("leaves the error's wording to the schema", () => {
    expect(() => toChatRequest({ ...base, max_tokens: 0 })).toThrow(/^Invalid max_tokens: /);
    expect(() => toChatRequest({ ...base, messages: [{ role: "" }] })).toThrow(/^Invalid messages\[0\]\.role: /);
  });
});
