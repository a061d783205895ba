import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CanonicalBase64 } from "../../src/providers/upstream-images/canonical-base64.js";
import { imagesResponseParts } from "../../src/media/image-answer-bytes.js";
import type { ImageItem } from "../../src/providers/upstream-images/image-delivery.js";

/** What the answer was before: JSON.stringify of the same answer with every image as text. */
function stringified(created: number, items: ImageItem[], rest: Record<string, unknown>): string {
  const data = items.map((item) => {
    const base64 = typeof item.base64 === "string" ? item.base64 : item.base64.text();
    const out: Record<string, string> = { [item.member]: item.head + base64 };
    if (item.revised_prompt !== undefined) out.revised_prompt = item.revised_prompt;
    return out;
  });
  return JSON.stringify(Object.assign({ created, data }, rest));
}

const bytesOf = (base64: string) => CanonicalBase64.ofText(base64)!;
/** The pieces joined, as the client receives them. */
const written = (created: number, items: ImageItem[], rest: Record<string, unknown>) =>
  Buffer.concat(imagesResponseParts(created, items, rest));

describe("imagesResponseParts", () => {
  it("writes JSON.stringify's text of the answer, the base64 put in as the bytes it came in", () => {
    const items: ImageItem[] = [
      { member: "b64_json", head: "", base64: bytesOf("iVBORw0KGgo=") },
      { member: "url", head: "data:image/png;base64,", base64: bytesOf("R0lGODlh"), revised_prompt: 'a "cat" é \u2028 \n' },
      { member: "b64_json", head: "", base64: "UklGRg==" },
    ];
    const rest = { size: "1024x1024", usage: { input_tokens: 3, input_tokens_details: { text_tokens: 3, image_tokens: 0 } } };
    const bytes = written(1767225600, items, rest);
    expect(bytes.toString("utf8")).toBe(stringified(1767225600, items, rest));
    // The base64 that came as bytes is one of the pieces itself, never copied.
    const parts = imagesResponseParts(1767225600, items, rest);
    for (const item of items) if (item.base64 instanceof CanonicalBase64) expect(parts).toContain(item.base64.bytes);
  });

  it("writes an answer without images or other members", () => {
    expect(written(1, [], {}).toString()).toBe('{"created":1,"data":[]}');
    const one: ImageItem[] = [{ member: "b64_json", head: "", base64: bytesOf("QUJD") }];
    expect(written(1, one, {}).toString()).toBe('{"created":1,"data":[{"b64_json":"QUJD"}]}');
  });

  it("agrees with JSON.stringify for any items and members", () => {
    const base64 = fc
      .uint8Array({ minLength: 1, maxLength: 9 })
      .chain((b) =>
        fc.constantFrom<string | CanonicalBase64>(Buffer.from(b).toString("base64"), bytesOf(Buffer.from(b).toString("base64"))),
      );
    const item = fc.record(
      {
        member: fc.constantFrom<"url" | "b64_json">("url", "b64_json"),
        head: fc.constantFrom("", "data:image/webp;base64,"),
        base64,
        revised_prompt: fc.string({ unit: "binary" }),
      },
      { requiredKeys: ["member", "head", "base64"] },
    );
    // Object.assign, which the oracle builds its object with, would make a "__proto__" member the prototype.
    const name = fc.string({ unit: "binary" }).filter((key) => key !== "__proto__");
    const rest = fc.dictionary(name, fc.jsonValue(), { maxKeys: 4 });
    fc.assert(
      fc.property(fc.nat(), fc.array(item, { maxLength: 4 }), rest, (created, items, others) => {
        // The answer's own members come first, as in the object JSON.stringify was given.
        delete others.created;
        delete others.data;
        expect(written(created, items, others).toString("utf8")).toBe(stringified(created, items, others));
      }),
      { numRuns: 1000 },
    );
  });
});
