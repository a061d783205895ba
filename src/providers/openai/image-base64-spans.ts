// Where the images sit in the bytes of an OpenAI ImagesResponse: the `b64_json` string of each `data` item,
// megabytes each, beside a few hundred bytes of everything else. Found by the shared scanner
// (src/providers/json-byte-scan.ts: a "b64_json" inside revised_prompt, a nested "data" or an escaped quote is
// never taken for one), so that the reader can parse the rest and leave the base64 as the bytes it arrived in
// (src/providers/read-result.ts).

import { arrayOr, objectOr, opensObject, readMembers, stringSpan, type ByteSpan } from "../json-byte-scan.js";

/** One item's base64: the string's content is bytes [start, end) (its quotes excluded); `item` is its index in `data`. */
export interface Base64Span extends ByteSpan {
  item: number;
}

/**
 * The `b64_json` strings of the `data` items of the JSON object in `bytes` (UTF-8, no BOM), in order; null when
 * the text is not an object or the answer is ambiguous: `data` or an item's `b64_json` twice (JSON.parse keeps the
 * last, a client might read the first), or a key written with escapes. The bytes are not checked as JSON: the
 * caller parses everything but the spans, and a span's content is only taken out when it cannot change that parse.
 */
export function imageBase64Spans(bytes: Buffer): Base64Span[] | null {
  const i = opensObject(bytes);
  if (i < 0) return null;
  const spans: Base64Span[] = [];
  const end = readMembers(bytes, i, {
    data: (start) =>
      arrayOr(bytes, start, (item, at) =>
        objectOr(bytes, at, {
          b64_json: (value) => stringSpan(bytes, value, (span) => spans.push({ item, start: span.start, end: span.end })),
        }),
      ),
  });
  return end < 0 ? null : spans;
}
