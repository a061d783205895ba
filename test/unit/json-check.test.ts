import { describe, expect, it } from "vitest";
import { isJsonObject } from "../../src/providers/json-check.js";

/** What the check must agree with. */
function parsesToObject(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value);
  } catch {
    return false;
  }
}

const chunk =
  '{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1735689600,"model":"m","choices":[{"index":0,' +
  '"delta":{"content":"caf\\u00e9 \\"q\\" \\\\ \\n\\t","tool_calls":[{"function":{"arguments":"{\\"a\\":[1,2.5e-3,-0,true,false,null]}"}}]},' +
  '"logprobs":null,"finish_reason":null}],"usage":{"prompt_tokens":6,"completion_tokens":9,"x":-12.5E+2}}';

describe("isJsonObject", () => {
  it.each([
    "{}",
    " \t\r\n{ } \n",
    '{"a":1}',
    '{"a":[],"b":{},"c":[[]],"d":[{}]}',
    '{"":0,"a":-0.0,"b":1e5,"c":1E-5,"d":0.5,"e":-1.25e+10}',
    '{"s":"\\ud800 lone surrogate escape","t":"\u{1F600} raw","u":"\\/\\b\\f\\r"}',
    '{"a" : [ 1 , 2 ] , "b" : { "c" : null } }',
    chunk,
  ])("accepts %s", (text) => {
    expect(parsesToObject(text)).toBe(true);
    expect(isJsonObject(text)).toBe(true);
  });

  it.each([
    "",
    "[]",
    "[1]",
    "1",
    '"s"',
    "null",
    "{",
    "}",
    '{"a"}',
    '{"a":}',
    '{"a":1,}',
    '{"a":1 "b":2}',
    '{a:1}',
    "{'a':1}",
    '{"a":[1,]}',
    '{"a":01}',
    '{"a":1.}',
    '{"a":.5}',
    '{"a":1e}',
    '{"a":+1}',
    '{"a":-}',
    '{"a":tru}',
    '{"a":nul}',
    '{"a":truex}',
    '{"a":NaN}',
    '{"a":"\\x41"}',
    '{"a":"\\u12G4"}',
    '{"a":"tab\there"}',
    '{"a":"line\nbreak"}',
    '{"a":"unterminated}',
    '{"a":1}}',
    '{"a":1} x',
    '{"a":[1}',
    '{"a":{"b":1]}',
  ])("rejects %s", (text) => {
    expect(parsesToObject(text)).toBe(false);
    expect(isJsonObject(text)).toBe(false);
  });

  it("agrees with JSON.parse on every single-character change of a real chunk", () => {
    const alphabet = ['"', "\\", ",", ":", "{", "}", "[", "]", " ", "0", "1", "-", "+", ".", "e", "E", "u", "a", "n", "t", "\n", "\u0001", "x"];
    let checked = 0;
    for (let i = 0; i < chunk.length; i++) {
      const variants = [chunk.slice(0, i) + chunk.slice(i + 1), ...alphabet.flatMap((c) => [chunk.slice(0, i) + c + chunk.slice(i + 1), chunk.slice(0, i) + c + chunk.slice(i)])];
      for (const text of variants) {
        expect(isJsonObject(text), text).toBe(parsesToObject(text));
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(10_000);
  });

  it("takes deep nesting up to its limit and refuses beyond it, without recursion", () => {
    const nested = (depth: number) => `{"a":${"[".repeat(depth - 1)}${"]".repeat(depth - 1)}}`;
    expect(isJsonObject(nested(1024))).toBe(true);
    expect(isJsonObject(nested(1025))).toBe(false);
    expect(isJsonObject(`{"a":${"[".repeat(100_000)}`)).toBe(false);
  });
});
