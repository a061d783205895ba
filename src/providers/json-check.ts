// Whether a text is a JSON object, without building it. A stream's events are checked as they arrive, but most
// are relayed as text and never read: JSON.parse on each of them allocated the whole object graph only for the
// garbage collector (a third of a relayed stream's CPU on the benchmark machine). Accepts exactly what
// JSON.parse accepts (RFC 8259), nesting up to MAX_DEPTH.

const MAX_DEPTH = 1024;
const QUOTE = 34;
const BACKSLASH = 92;
const COMMA = 44;
const COLON = 58;
const MINUS = 45;
const PLUS = 43;
const DOT = 46;
const ZERO = 48;
const NINE = 57;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;
const IN_OBJECT = 1;
const IN_ARRAY = 2;

// Reused by every call: JavaScript runs one check at a time.
const open = new Uint8Array(MAX_DEPTH);

const isDigit = (c: number) => c >= ZERO && c <= NINE;
const isHex = (c: number) => isDigit(c) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102);

function skipSpace(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c !== 32 && c !== 10 && c !== 13 && c !== 9) return i;
    i++;
  }
}

/** Index after the string opening at `i`; -1 if it is not a valid JSON string. */
function stringEnd(text: string, i: number): number {
  for (let j = i + 1; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === QUOTE) return j + 1;
    if (c < 32) return -1;
    if (c !== BACKSLASH) continue;
    const e = text.charCodeAt(++j);
    if (e === 117) {
      // \uXXXX
      if (!(isHex(text.charCodeAt(j + 1)) && isHex(text.charCodeAt(j + 2)) && isHex(text.charCodeAt(j + 3)) && isHex(text.charCodeAt(j + 4)))) return -1;
      j += 4;
    } else if (e !== QUOTE && e !== BACKSLASH && e !== 47 && e !== 98 && e !== 102 && e !== 110 && e !== 114 && e !== 116) {
      return -1;
    }
  }
  return -1;
}

function digitsEnd(text: string, i: number): number {
  while (isDigit(text.charCodeAt(i))) i++;
  return i;
}

/** Index after the number starting at `i`; -1 if it is not a valid JSON number. */
function numberEnd(text: string, i: number): number {
  if (text.charCodeAt(i) === MINUS) i++;
  const first = text.charCodeAt(i);
  if (first === ZERO) i++;
  else if (isDigit(first)) i = digitsEnd(text, i + 1);
  else return -1;
  if (text.charCodeAt(i) === DOT) {
    if (!isDigit(text.charCodeAt(i + 1))) return -1;
    i = digitsEnd(text, i + 1);
  }
  const e = text.charCodeAt(i);
  if (e === 101 || e === 69) {
    i++;
    const sign = text.charCodeAt(i);
    if (sign === PLUS || sign === MINUS) i++;
    if (!isDigit(text.charCodeAt(i))) return -1;
    i = digitsEnd(text, i);
  }
  return i;
}

/** Index after `"key" :` at `i` (spaces before the key skipped); -1 if there is none. */
function keyEnd(text: string, i: number): number {
  i = skipSpace(text, i);
  if (text.charCodeAt(i) !== QUOTE) return -1;
  i = stringEnd(text, i);
  if (i < 0) return -1;
  i = skipSpace(text, i);
  return text.charCodeAt(i) === COLON ? i + 1 : -1;
}

export function isJsonObject(text: string): boolean {
  let i = skipSpace(text, 0);
  if (text.charCodeAt(i) !== OPEN_BRACE) return false;
  let depth = 0;
  for (;;) {
    // A value starts here.
    i = skipSpace(text, i);
    const c = text.charCodeAt(i);
    if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (depth === MAX_DEPTH) return false;
      open[depth++] = c === OPEN_BRACE ? IN_OBJECT : IN_ARRAY;
      const next = skipSpace(text, i + 1);
      if (text.charCodeAt(next) !== (c === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET)) {
        i = c === OPEN_BRACE ? keyEnd(text, next) : next;
        if (i < 0) return false;
        continue;
      }
      depth--;
      i = next + 1;
    } else if (c === QUOTE) {
      i = stringEnd(text, i);
    } else if (c === MINUS || isDigit(c)) {
      i = numberEnd(text, i);
    } else if (text.startsWith("true", i) || text.startsWith("null", i)) {
      i += 4;
    } else if (text.startsWith("false", i)) {
      i += 5;
    } else {
      return false;
    }
    if (i < 0) return false;
    // The value ended: close what it ends, up to the next value.
    for (;;) {
      if (depth === 0) return skipSpace(text, i) === text.length;
      i = skipSpace(text, i);
      const d = text.charCodeAt(i);
      const inObject = open[depth - 1] === IN_OBJECT;
      if (d === COMMA) {
        i = inObject ? keyEnd(text, i + 1) : i + 1;
        if (i < 0) return false;
        break;
      }
      if (d !== (inObject ? CLOSE_BRACE : CLOSE_BRACKET)) return false;
      depth--;
      i++;
    }
  }
}
