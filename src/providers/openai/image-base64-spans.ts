// Where the images sit in the bytes of an OpenAI ImagesResponse: the `b64_json` string of each `data` item,
// megabytes each, beside a few hundred bytes of everything else. Found by a scanner that tracks strings and
// nesting (a "b64_json" inside revised_prompt, a nested "data" or an escaped quote is never taken for one), so that
// the reader can parse the rest and leave the base64 as the bytes it arrived in (src/providers/read-result.ts).

import {
  BACKSLASH,
  CLOSE_BRACE,
  CLOSE_BRACKET,
  COLON,
  COMMA,
  isDelimiter,
  isSpace,
  OPEN_BRACE,
  OPEN_BRACKET,
  QUOTE,
} from "../../json-scan.js";
/** One item's base64: the string's content is bytes [start, end) (its quotes excluded); `item` is its index in `data`. */
export interface Base64Span {
  item: number;
  start: number;
  end: number;
}

function skipSpace(bytes: Buffer, i: number): number {
  while (isSpace(bytes[i])) i++;
  return i;
}

/** Index just after the string that opens at `i`; -1 if it never closes. */
function stringEnd(bytes: Buffer, i: number): number {
  // Buffer.indexOf runs natively: a megabyte of base64 is crossed in tens of microseconds.
  for (let from = i + 1; ;) {
    const quote = bytes.indexOf(QUOTE, from);
    if (quote < 0) return -1;
    let backslashes = 0;
    while (bytes[quote - 1 - backslashes] === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** Index just after the value that starts at `i`; -1 if the bytes end first. */
function valueEnd(bytes: Buffer, i: number): number {
  const first = bytes[i];
  if (first === QUOTE) return stringEnd(bytes, i);
  if (first !== OPEN_BRACE && first !== OPEN_BRACKET) {
    // A number or a literal: it runs to the next delimiter.
    let j = i;
    while (j < bytes.length && !isDelimiter(bytes[j])) j++;
    return j > i ? j : -1;
  }
  let depth = 0;
  for (let j = i; j < bytes.length; j++) {
    const c = bytes[j];
    if (c === QUOTE) {
      const end = stringEnd(bytes, j);
      if (end < 0) return -1;
      j = end - 1;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
    else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
      if (depth === 0) return j + 1;
    }
  }
  return -1;
}

/**
 * Reads the object that opens at `i`, handing each member's name and the start of its value to `member`, which
 * answers the index just after the value (valueEnd, or its own reading of it): each value is crossed once. Answers
 * the index just after the object; -1 when it is malformed, `member` answers -1, or a key is written with escapes.
 */
function eachMember(bytes: Buffer, i: number, member: (name: string, start: number) => number): number {
  i = skipSpace(bytes, i + 1);
  if (bytes[i] === CLOSE_BRACE) return i + 1;
  for (;;) {
    if (bytes[i] !== QUOTE) return -1;
    const keyEnd = bytes.indexOf(QUOTE, i + 1);
    // A key with an escape could spell any name (and the quote found may be an escaped one).
    if (keyEnd < 0 || bytes.subarray(i + 1, keyEnd).includes(BACKSLASH)) return -1;
    const name = bytes.toString("latin1", i + 1, keyEnd);
    i = skipSpace(bytes, keyEnd + 1);
    if (bytes[i] !== COLON) return -1;
    const end = member(name, skipSpace(bytes, i + 1));
    if (end < 0) return -1;
    i = skipSpace(bytes, end);
    if (bytes[i] === CLOSE_BRACE) return i + 1;
    if (bytes[i] !== COMMA) return -1;
    i = skipSpace(bytes, i + 1);
  }
}

/** Reads one `data` item, adding the span of its b64_json string if it has one; -1 also for a second b64_json. */
function itemSpan(bytes: Buffer, start: number, item: number, spans: Base64Span[]): number {
  let seen = false;
  return eachMember(bytes, start, (name, valueStart) => {
    const end = valueEnd(bytes, valueStart);
    if (name !== "b64_json" || end < 0) return end;
    // JSON.parse keeps the last of two, a client might read the first.
    if (seen) return -1;
    seen = true;
    if (bytes[valueStart] === QUOTE) spans.push({ item, start: valueStart + 1, end: end - 1 });
    return end;
  });
}

/** Reads the `data` array that opens at `i`, adding its items' spans; the index just after it, or -1. */
function dataSpans(bytes: Buffer, i: number, spans: Base64Span[]): number {
  i = skipSpace(bytes, i + 1);
  if (bytes[i] === CLOSE_BRACKET) return i + 1;
  for (let item = 0; ; item++) {
    const end = bytes[i] === OPEN_BRACE ? itemSpan(bytes, i, item, spans) : valueEnd(bytes, i);
    if (end < 0) return -1;
    i = skipSpace(bytes, end);
    if (bytes[i] === CLOSE_BRACKET) return i + 1;
    if (bytes[i] !== COMMA) return -1;
    i = skipSpace(bytes, i + 1);
  }
}

/**
 * The `b64_json` strings of the `data` items of the JSON object in `bytes` (UTF-8, no BOM), in order; null when
 * the text is not an object or the answer is ambiguous: `data` or an item's `b64_json` twice (JSON.parse keeps the
 * last, a client might read the first), or a key written with escapes. The bytes are not checked as JSON: the
 * caller parses everything but the spans, and a span's content is only taken out when it cannot change that parse.
 */
export function imageBase64Spans(bytes: Buffer): Base64Span[] | null {
  const i = skipSpace(bytes, 0);
  if (bytes[i] !== OPEN_BRACE) return null;
  const spans: Base64Span[] = [];
  let seen = false;
  const end = eachMember(bytes, i, (name, start) => {
    if (name !== "data") return valueEnd(bytes, start);
    if (seen) return -1;
    seen = true;
    return bytes[start] === OPEN_BRACKET ? dataSpans(bytes, start, spans) : valueEnd(bytes, start);
  });
  return end < 0 ? null : spans;
}
