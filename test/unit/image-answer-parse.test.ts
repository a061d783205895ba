import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CanonicalBase64 } from "../../src/providers/upstream-images/canonical-base64.js";
import { imageBase64Spans } from "../../src/providers/openai/image-base64-spans.js";
import { parseImagesAnswer } from "../../src/providers/openai/images.js";

const PNG_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGM2Zj4DAAIzAVVl3R1qAAAAAElFTkSuQmCC";
const bytes = (text: string) => Buffer.from(text, "utf8");
/** The spans' contents, by item. */
const found = (text: string) =>
  imageBase64Spans(bytes(text))?.map(({ item, start, end }) => [item, bytes(text).toString("utf8", start, end)] as const) ?? null;

/** The parse with each CanonicalBase64 written back as its text: what JSON.parse of the whole answer gives. */
function asParsed(value: unknown): unknown {
  if (value instanceof CanonicalBase64) return value.text();
  if (Array.isArray(value)) return value.map(asParsed);
  if (typeof value === "object" && value !== null) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, asParsed(v)]));
  return value;
}

describe("imageBase64Spans", () => {
  it("finds each data item's b64_json, in order, by its index", () => {
    const text = JSON.stringify({
      created: 1,
      data: [{ b64_json: "QUJD" }, { url: "https://x" }, { revised_prompt: "r", b64_json: "QUI=" }],
    });
    expect(found(text)).toEqual([
      [0, "QUJD"],
      [2, "QUI="],
    ]);
  });

  it("reads through whitespace, nested values and strings that look like members", () => {
    const text =
      ' \n{ "usage" : {"data": [{"b64_json": "AAAA"}]} , "note": "\\"data\\": [{\\"b64_json\\": \\"BBBB\\"}]",\r\n' +
      '\t"data" : [ 1, null, [ {"b64_json":"CCCC"} ], { "x": {"b64_json": "DDDD"}, "revised_prompt": "a \\"b64_json\\": \\"EEEE\\"" ,"b64_json" : "QUJD" } ] }';
    expect(JSON.parse(text)).toBeTruthy();
    expect(found(text)).toEqual([[3, "QUJD"]]);
  });

  it("finds nothing where there is no data array, or no string in b64_json", () => {
    expect(found('{"data":{"b64_json":"QUJD"}}')).toEqual([]);
    expect(found('{"data":[{"b64_json":null},{"b64_json":1},{"b64_json":["QUJD"]}]}')).toEqual([]);
    expect(found('{"created":1}')).toEqual([]);
    expect(found("{}")).toEqual([]);
    expect(found('{"data":[]}')).toEqual([]);
  });

  it.each([
    ["an array", "[1]"],
    ["a string", '"data"'],
    ["data twice", '{"data":[{"b64_json":"QUJD"}],"data":[]}'],
    ["data twice, the first not an array", '{"data":1,"data":[{"b64_json":"QUJD"}]}'],
    ["b64_json twice in an item", '{"data":[{"b64_json":"QUJD","b64_json":"QUI="}]}'],
    ["an escaped top-level key", '{"d\\u0061ta":[{"b64_json":"QUJD"}]}'],
    ["an escaped item key", '{"data":[{"b64\\u005fjson":"QUJD"}]}'],
    ["an unclosed string", '{"data":[{"b64_json":"QUJD}]}'],
    ["an unclosed object", '{"data":[{"b64_json":"QUJD"}]'],
    ["a missing colon", '{"data" [{"b64_json":"QUJD"}]}'],
    ["a missing comma", '{"created":1 "data":[]}'],
  ])("declines %s", (_, text) => {
    expect(imageBase64Spans(bytes(text))).toBeNull();
  });
});

describe("parseImagesAnswer", () => {
  it("parses the answer without its canonical base64, which it holds as CanonicalBase64 over the answer's own bytes", () => {
    const answer = { created: 7, data: [{ b64_json: PNG_B64, revised_prompt: 'é "q" \u2028' }], usage: { input_tokens: 1 } };
    const text = bytes(JSON.stringify(answer));
    const { body, raw } = parseImagesAnswer(text);
    const item = (body as { data: { b64_json: CanonicalBase64 }[] }).data[0]!;
    expect(item.b64_json).toBeInstanceOf(CanonicalBase64);
    expect(item.b64_json.bytes.buffer).toBe(text.buffer);
    expect(asParsed(body)).toEqual(answer);
    expect(raw).toBe(JSON.stringify(answer).replace(PNG_B64, ""));
  });

  it("leaves base64 that is not canonical in the text, parsed as a string for delivery to refuse", () => {
    for (const b64 of ["QUJ", "QU JD", "QR==", "QUJD\\n", "QUJD\\/"]) {
      const text = `{"data":[{"b64_json":"${b64}"}]}`;
      expect(parseImagesAnswer(bytes(text)).body).toEqual(JSON.parse(text));
    }
  });

  it("refuses what JSON.parse refuses, whatever the spans", () => {
    for (const text of [
      '{"data":[{"b64_json":"QUJD"}], tru}',
      '{"data":[{"b64_json":"QUJD","x":01}]}',
      '{"data":[{"b64_json":"QUJD"}]}x',
    ]) {
      expect(() => JSON.parse(text)).toThrow();
      expect(() => parseImagesAnswer(bytes(text))).toThrow();
    }
  });

  it("gives what JSON.parse gives, for any answer and any spacing", () => {
    const b64 = fc.uint8Array({ minLength: 1, maxLength: 12 }).map((b) => Buffer.from(b).toString("base64"));
    const text = fc.string({ unit: "binary", maxLength: 8 });
    const item = fc.record({ b64_json: fc.oneof(b64, text, fc.constant(null)), revised_prompt: text, url: text }, { requiredKeys: [] });
    const answer = fc.record(
      { created: fc.nat(), data: fc.array(item, { maxLength: 3 }), background: text, data2: fc.array(item) },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(answer, fc.constantFrom(undefined, 1, "\t", " \r\n"), (value, space) => {
        const json = JSON.stringify(value, null, space);
        expect(asParsed(parseImagesAnswer(bytes(json)).body)).toEqual(JSON.parse(json));
      }),
      { numRuns: 1000 },
    );
  });
});
