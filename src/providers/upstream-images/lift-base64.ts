import type { ByteSpan } from "../json-byte-scan.js";
import { parseJson } from "../read-result.js";
import { CanonicalBase64 } from "./canonical-base64.js";

/**
 * An image answer parsed without its images: each span (a string's content, found by a scan of the bytes) that
 * is canonical base64 is cut out of the text before JSON.parse, and put back into the parse by `put` as a
 * CanonicalBase64 over the bytes it arrived in, which the answer is then written from (src/media/image-answer.ts):
 * a megabyte image is neither parsed, nor made a string, nor serialised again. `raw` is the text without them.
 * Base64 that is not canonical stays in the text, parsed as before, and is refused by delivery's own check with
 * the same reason.
 *
 * Cutting a span out changes nothing else: it lies inside a string (the scanner tracks strings and nesting as JSON
 * does) and holds only alphabet characters, so the text parses exactly when the whole answer would have, and the
 * parse then has an empty string where each span was.
 */
export function parseLiftingBase64<S extends ByteSpan>(
  bytes: Buffer,
  spans: readonly S[] | null,
  put: (body: Record<string, unknown>, span: S, base64: CanonicalBase64) => void,
): { body: unknown; raw: string } {
  if (spans === null || spans.length === 0) return parseJson(bytes);
  const lifted: { span: S; base64: CanonicalBase64 }[] = [];
  let raw = "";
  let at = 0;
  for (const span of spans) {
    const base64 = CanonicalBase64.ofBytes(bytes.subarray(span.start, span.end));
    if (base64 === null) continue;
    // A span starts and ends beside a quote (ASCII), so no UTF-8 sequence is cut.
    raw += bytes.toString("utf8", at, span.start);
    at = span.end;
    lifted.push({ span, base64 });
  }
  raw += bytes.toString("utf8", at);
  const body = JSON.parse(raw) as Record<string, unknown>;
  for (const { span, base64 } of lifted) put(body, span, base64);
  return { body, raw };
}
