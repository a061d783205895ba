// Edits top-level members of a JSON object in its text: the relay puts the public model ID into an upstream
// answer, or drops its usage member, without serialising the whole answer again. Positions are found by a
// scanner that tracks strings and nesting, so a nested "model" key, a "model" inside message
// content or an escaped quote is never taken for a top-level member.

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
/** Where one top-level member sits: [start, end) removes it with one adjacent comma; the value is [valueStart, valueEnd). */
export interface Member {
  start: number;
  end: number;
  valueStart: number;
  valueEnd: number;
}

/** A splice of the text: [start, end) becomes `text`. */
export interface Edit {
  start: number;
  end: number;
  text: string;
}

function skipSpace(text: string, i: number): number {
  while (isSpace(text.charCodeAt(i))) i++;
  return i;
}

/** Index just after the string that opens at `i`; -1 if it never closes. */
function stringEnd(text: string, i: number): number {
  // indexOf runs natively: on the sliced strings the SSE parser hands out it is twice as fast as a charCodeAt loop.
  for (let from = i + 1; ;) {
    const quote = text.indexOf('"', from);
    if (quote < 0) return -1;
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === BACKSLASH) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** Like stringEnd for a key, but -1 also when the key has an escape (it could spell any name). */
function plainKeyEnd(text: string, i: number): number {
  const quote = text.indexOf('"', i + 1);
  if (quote < 0) return -1;
  for (let j = i + 1; j < quote; j++) if (text.charCodeAt(j) === BACKSLASH) return -1;
  return quote + 1;
}

/** Index just after the value that starts at `i`; -1 if the text ends first. */
function valueEnd(text: string, i: number): number {
  const first = text.charCodeAt(i);
  if (first === QUOTE) return stringEnd(text, i);
  if (first !== OPEN_BRACE && first !== OPEN_BRACKET) {
    // A number or a literal: it runs to the next delimiter.
    let j = i;
    while (j < text.length && !isDelimiter(text.charCodeAt(j))) j++;
    return j > i ? j : -1;
  }
  let depth = 0;
  for (let j = i; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === QUOTE) {
      const end = stringEnd(text, j);
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

function nameAt(text: string, keyStart: number, keyEnd: number, names: readonly string[]): string | undefined {
  const length = keyEnd - keyStart - 2;
  for (const name of names) if (name.length === length && text.startsWith(name, keyStart + 1)) return name;
  return undefined;
}

/**
 * The top-level members called `names` of the JSON object in `text`, which must be valid JSON (parsed
 * already). Null when the text is not an object, or when the answer is ambiguous: a wanted name appears twice
 * (JSON.parse keeps the last, a client might read the first) or a top-level key is written with escapes
 * (it could spell a wanted name). Callers then fall back to parsing and serialising.
 */
export function findMembers(text: string, names: readonly string[]): Map<string, Member> | null {
  const found = new Map<string, Member>();
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== OPEN_BRACE) return null;
  i = skipSpace(text, i + 1);
  if (text.charCodeAt(i) === CLOSE_BRACE) return found;
  let commaBefore = -1;
  for (;;) {
    if (text.charCodeAt(i) !== QUOTE) return null;
    const keyStart = i;
    const keyEnd = plainKeyEnd(text, i);
    if (keyEnd < 0) return null;
    i = skipSpace(text, keyEnd);
    if (text.charCodeAt(i) !== COLON) return null;
    const valueStart = skipSpace(text, i + 1);
    const end = valueEnd(text, valueStart);
    if (end < 0) return null;
    i = skipSpace(text, end);
    const next = text.charCodeAt(i);
    if (next !== COMMA && next !== CLOSE_BRACE) return null;
    const name = nameAt(text, keyStart, keyEnd, names);
    if (name !== undefined) {
      if (found.has(name)) return null;
      // Removing a member takes the comma before it, or for the first member the comma after it.
      const start = commaBefore >= 0 ? commaBefore : keyStart;
      const cutEnd = commaBefore < 0 && next === COMMA ? skipSpace(text, i + 1) : end;
      found.set(name, { start, end: cutEnd, valueStart, valueEnd: end });
    }
    if (next === CLOSE_BRACE) return found;
    commaBefore = i;
    i = skipSpace(text, i + 1);
  }
}

/** Applies non-overlapping edits. */
export function applyEdits(text: string, edits: Edit[]): string {
  if (edits.length === 0) return text;
  // Two edits (a stream chunk's model and usage) are ordered by hand: sort() allocates a work array per call.
  const sorted =
    edits.length === 1 || (edits.length === 2 && edits[0]!.start <= edits[1]!.start)
      ? edits
      : edits.length === 2
        ? [edits[1]!, edits[0]!]
        : [...edits].sort((a, b) => a.start - b.start);
  let out = "";
  let at = 0;
  for (const edit of sorted) {
    out += text.slice(at, edit.start) + edit.text;
    at = edit.end;
  }
  return out + text.slice(at);
}
