import type { ImageItem } from "../providers/upstream-images/image-delivery.js";

// An ImagesResponse written as pieces of bytes around its images' base64, which is the bytes the upstream sent it
// in: joined, the JSON text JSON.stringify makes of the same answer (test/unit/image-answer-bytes.test.ts), without
// a megabyte string being built, scanned for escapes and encoded to UTF-8 again, or the base64 copied at all.

/**
 * `{"created":…,"data":[…],…rest}`. Each item's member holds its head and base64 between quotes as they are
 * (neither has a character JSON escapes), then its revised_prompt; `rest`'s members follow `data`.
 */
export function imagesResponseParts(created: number, items: readonly ImageItem[], rest: Record<string, unknown>): Uint8Array[] {
  const parts: Uint8Array[] = [];
  let text = `{"created":${JSON.stringify(created)},"data":[`;
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    text += `${i > 0 ? "," : ""}{"${item.member}":"${item.head}`;
    if (typeof item.base64 === "string") text += item.base64;
    else {
      parts.push(Buffer.from(text), item.base64.bytes);
      text = "";
    }
    text += item.revised_prompt === undefined ? '"}' : `","revised_prompt":${JSON.stringify(item.revised_prompt)}}`;
  }
  // JSON.stringify writes the rest's members as it would have inside the whole answer.
  const tail = JSON.stringify(rest);
  parts.push(Buffer.from(tail === "{}" ? `${text}]}` : `${text}],${tail.slice(1)}`));
  return parts;
}
