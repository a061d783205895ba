// The bytes a JSON scanner looks at, shared by the scanners that find members in a JSON text without parsing it
// whole (src/metering/json-members.ts on a string, src/providers/json-byte-scan.ts on bytes): the
// character codes are the same in UTF-16 and UTF-8 for these ASCII characters.

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;

/** JSON whitespace; past the end of the text (undefined, or NaN from charCodeAt) is not. */
export const isSpace = (c: number | undefined) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/** What may follow a value: a comma, the end of its object or array, or whitespace. */
export const isDelimiter = (c: number | undefined) => c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET || isSpace(c);
