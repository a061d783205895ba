import { describe, expect, it } from "vitest";
import { applyEdits, findMembers } from "../../src/metering/json-members.js";

/** The text with the top-level model set to "pub" (null when findMembers declines), checked against JSON.parse. */
function withModel(text: string): string | null {
  const model = findMembers(text, ["model"])?.get("model");
  if (!model) return null;
  const out = applyEdits(text, [{ start: model.valueStart, end: model.valueEnd, text: '"pub"' }]);
  expect(JSON.parse(out)).toEqual({ ...(JSON.parse(text) as object), model: "pub" });
  return out;
}

/** The text without its top-level usage member, checked against JSON.parse. */
function withoutUsage(text: string): string | null {
  const usage = findMembers(text, ["usage"])?.get("usage");
  if (!usage) return null;
  const out = applyEdits(text, [{ start: usage.start, end: usage.end, text: "" }]);
  const expected = JSON.parse(text) as Record<string, unknown>;
  delete expected.usage;
  expect(JSON.parse(out)).toEqual(expected);
  return out;
}

describe("findMembers", () => {
  it("finds the top-level model of an ordinary answer and edits only its value", () => {
    const text =
      '{"id":"c1","object":"chat.completion","created":1,"model":"up",' +
      '"choices":[{"index":0,"message":{"role":"assistant","content":"hi"}}],"usage":null}';
    expect(withModel(text)).toBe(text.replace('"model":"up"', '"model":"pub"'));
  });

  it("is not fooled by a model key inside message content, nested objects or arrays", () => {
    expect(withModel('{"choices":[{"message":{"content":"{\\"model\\":\\"x\\"}","model":"nested"}}],"model":"up"}')).toBe(
      '{"choices":[{"message":{"content":"{\\"model\\":\\"x\\"}","model":"nested"}}],"model":"pub"}',
    );
    expect(withModel('{"meta":{"model":"a","deeper":[{"model":"b"}]},"list":["model",":","model"],"model":"up"}')).toBe(
      '{"meta":{"model":"a","deeper":[{"model":"b"}]},"list":["model",":","model"],"model":"pub"}',
    );
    expect(findMembers('{"meta":{"model":"a"}}', ["model"])?.get("model")).toBeUndefined();
  });

  it("handles escaped quotes and backslashes in strings around the member", () => {
    expect(withModel('{"a":"\\"","b":"\\\\","c":"x\\\\\\"y","model":"up\\"s","d":"\\\\"}')).toBe(
      '{"a":"\\"","b":"\\\\","c":"x\\\\\\"y","model":"pub","d":"\\\\"}',
    );
    expect(withModel('{"text":"say \\"model\\": \\"up\\"","model":"up"}')).toBe('{"text":"say \\"model\\": \\"up\\"","model":"pub"}');
  });

  it("handles whitespace anywhere JSON allows it", () => {
    const text = ' \n{ "id" : 1 ,\t"model"\r\n:\n "up" , "n" : [ 1 , { "model" : 2 } ] }\n';
    expect(withModel(text)).toBe(' \n{ "id" : 1 ,\t"model"\r\n:\n "pub" , "n" : [ 1 , { "model" : 2 } ] }\n');
  });

  it("replaces a model of any type: number, null, object, array", () => {
    for (const value of ["3", "-1.5e3", "null", "true", '{"a":{"b":[1]}}', "[1,[2]]"]) {
      expect(withModel(`{"model":${value},"x":1}`)).toBe('{"model":"pub","x":1}');
    }
  });

  it("declines a duplicate top-level key: JSON.parse keeps the last, a client might read the first", () => {
    expect(findMembers('{"model":"a","x":1,"model":"b"}', ["model"])).toBeNull();
  });

  it("declines a top-level key written with escapes, which could spell the name", () => {
    expect(findMembers('{"mod\\u0065l":"up"}', ["model"])).toBeNull();
    expect(findMembers('{"a\\"b":1,"model":"up"}', ["model"])).toBeNull();
  });

  it("declines what is not an object", () => {
    for (const text of ['["model","up"]', '"model"', "42", "null", ""]) expect(findMembers(text, ["model"])).toBeNull();
  });

  it("declines truncated text instead of guessing", () => {
    for (const text of ['{"model":"up', '{"model":"up","x":[1,2', '{"model"', '{"x":{"model":"up"}'])
      expect(findMembers(text, ["model"])).toBeNull();
  });

  it("reports an absent member as absent, and an empty object as having none", () => {
    expect(findMembers('{"id":"x"}', ["model"])?.has("model")).toBe(false);
    expect(findMembers(" { } ", ["model"])?.size).toBe(0);
  });

  it("removes a member with one adjacent comma, wherever it stands", () => {
    expect(withoutUsage('{"id":1,"usage":null,"x":2}')).toBe('{"id":1,"x":2}');
    expect(withoutUsage('{"id":1,"usage":{"prompt_tokens":1}}')).toBe('{"id":1}');
    expect(withoutUsage('{"usage":null,"id":1}')).toBe('{"id":1}');
    expect(withoutUsage('{ "usage" : null , "id" : 1 }')).toBe('{ "id" : 1 }');
    expect(withoutUsage('{"usage":[1,{"a":"}"}]}')).toBe("{}");
  });

  it("edits the model and removes the usage of one chunk together, in either order", () => {
    const texts = ['{"model":"up","usage":null}', '{"usage":null,"model":"up"}', '{"a":1,"usage":{"b":2},"c":[3],"model":"up","d":4}'];
    for (const text of texts) {
      const members = findMembers(text, ["model", "usage"])!;
      const model = members.get("model")!;
      const usage = members.get("usage")!;
      const out = applyEdits(text, [
        { start: usage.start, end: usage.end, text: "" },
        { start: model.valueStart, end: model.valueEnd, text: '"pub"' },
      ]);
      const expected: Record<string, unknown> = { ...(JSON.parse(text) as Record<string, unknown>), model: "pub" };
      delete expected.usage;
      expect(JSON.parse(out)).toEqual(expected);
    }
  });
});
