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
} from "../json-scan.js";

// Reading a JSON answer's bytes without parsing them, to find where its images' base64 sits (megabytes each,
// beside a few hundred bytes of everything else): the scanner tracks strings and nesting as JSON does, so that a
// member name inside a string, a nested object or an escaped quote is never taken for what is looked for. Shared
// by the image answers of each protocol (src/providers/openai/image-base64-spans.ts,
// src/providers/gemini/inline-data-spans.ts).

/** One base64 string: its content is bytes [start, end) (its quotes excluded). */
export interface ByteSpan {
  start: number;
  end: number;
}

export function skipSpace(bytes: Buffer, i: number): number {
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
export function valueEnd(bytes: Buffer, i: number): number {
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
export function eachMember(bytes: Buffer, i: number, member: (name: string, start: number) => number): number {
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

/**
 * Reads the object that opens at `i` like eachMember, with only the members named in `read` read by their own
 * function; any other member is skipped. -1 also when a name of `read` appears twice: JSON.parse keeps the last,
 * a client might read the first, so such an answer is ambiguous.
 */
export function readMembers(bytes: Buffer, i: number, read: Record<string, (start: number) => number>): number {
  const seen = new Set<string>();
  return eachMember(bytes, i, (name, start) => {
    if (!Object.hasOwn(read, name)) return valueEnd(bytes, start);
    if (seen.has(name)) return -1;
    seen.add(name);
    return read[name]!(start);
  });
}

/** Reads the array that opens at `i`, handing each item's index and start to `item`; the index just after it, or -1. */
export function eachItem(bytes: Buffer, i: number, item: (index: number, start: number) => number): number {
  i = skipSpace(bytes, i + 1);
  if (bytes[i] === CLOSE_BRACKET) return i + 1;
  for (let index = 0; ; index++) {
    const end = item(index, i);
    if (end < 0) return -1;
    i = skipSpace(bytes, end);
    if (bytes[i] === CLOSE_BRACKET) return i + 1;
    if (bytes[i] !== COMMA) return -1;
    i = skipSpace(bytes, i + 1);
  }
}

/** The object at `i` read by readMembers, or any other value skipped (the parse decides what it means). */
export const objectOr = (bytes: Buffer, i: number, read: Record<string, (start: number) => number>): number =>
  bytes[i] === OPEN_BRACE ? readMembers(bytes, i, read) : valueEnd(bytes, i);

/** The array at `i` read by eachItem, or any other value skipped. */
export const arrayOr = (bytes: Buffer, i: number, item: (index: number, start: number) => number): number =>
  bytes[i] === OPEN_BRACKET ? eachItem(bytes, i, item) : valueEnd(bytes, i);

/** A string value's span (added to `spans` when it is a string), else the value skipped. */
export function stringSpan(bytes: Buffer, i: number, found: (span: ByteSpan) => void): number {
  const end = valueEnd(bytes, i);
  if (end >= 0 && bytes[i] === QUOTE) found({ start: i + 1, end: end - 1 });
  return end;
}

/** Whether the text at `i` (after whitespace) starts an object: the only answer a scan reads. */
export const opensObject = (bytes: Buffer): number => {
  const i = skipSpace(bytes, 0);
  return bytes[i] === OPEN_BRACE ? i : -1;
};
