import { arrayOr, objectOr, opensObject, readMembers, stringSpan, type ByteSpan } from "../json-byte-scan.js";
import type { JsonParse } from "../read-result.js";
import { parseLiftingBase64 } from "../upstream-images/lift-base64.js";

// Where the images sit in the bytes of a GenerateContentResponse: `candidates[c].content.parts[p].inlineData.data`,
// megabytes of base64 each (proto3 JSON writes `bytes` as padded standard base64). Found by the shared scanner
// (src/providers/json-byte-scan.ts) so that an image answer is parsed without them, as OpenAI's are.

/** One part's base64, by its candidate and part index. */
export interface InlineDataSpan extends ByteSpan {
  candidate: number;
  part: number;
}

/**
 * The `inlineData.data` strings of every candidate's parts, in order; null when the text is not an object or is
 * ambiguous (a member on the way named twice, a key written with escapes): the whole answer is then parsed.
 */
export function inlineDataSpans(bytes: Buffer): InlineDataSpan[] | null {
  const i = opensObject(bytes);
  if (i < 0) return null;
  const spans: InlineDataSpan[] = [];
  const part = (candidate: number) => (index: number, at: number) =>
    objectOr(bytes, at, {
      inlineData: (blob) =>
        objectOr(bytes, blob, {
          data: (value) => stringSpan(bytes, value, (span) => spans.push({ candidate, part: index, start: span.start, end: span.end })),
        }),
    });
  const end = readMembers(bytes, i, {
    candidates: (list) =>
      arrayOr(bytes, list, (candidate, at) =>
        objectOr(bytes, at, {
          content: (content) => objectOr(bytes, content, { parts: (parts) => arrayOr(bytes, parts, part(candidate)) }),
        }),
      ),
  });
  return end < 0 ? null : spans;
}

type Fields = Record<string, unknown>;

/** A GenerateContentResponse parsed with each canonical `inlineData.data` held as a CanonicalBase64 over its bytes. */
export const parseInlineDataAnswer: JsonParse = (bytes) =>
  parseLiftingBase64(bytes, inlineDataSpans(bytes), (body, span, base64) => {
    const candidate = (body.candidates as Fields[])[span.candidate]!;
    const part = ((candidate.content as Fields).parts as Fields[])[span.part]!;
    (part.inlineData as Fields).data = base64;
  });
