import { O200K_TOKEN_SPLIT_REGEX } from "gpt-tokenizer/encodingParams/constants";
import type { UsageReport } from "../providers/types.js";

// Token counts the gateway makes itself: a cheap, conservative estimate on the hot path (admission and the
// hold), and a real tokenizer (o200k_base) only where a number is billed or a refusal depends on it. The
// tokenizer's tables take about 70 MB, so they are loaded on first use: a gateway whose providers report usage
// never needs them.

let tokenizer: Promise<typeof import("gpt-tokenizer")> | undefined;

/** Special-token spellings (`<|endoftext|>`) in client text are text: the library would throw on them. */
const SPECIAL_AS_TEXT = { disallowedSpecial: new Set<string>() };
/** The tokenizer's cost grows with the square of a piece's length; a longer piece is counted in parts. */
const PIECE_MAX = 128;
/** Text is handed to the tokenizer in slices of about this many characters, so a count can stop early. */
const SLICE_MAX = 8192;
/** The split pattern runs over windows this long: over megabytes of one run it overflows the stack. */
const WINDOW = 65_536;

const WHITESPACE = /\s/u;
const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;

/** [from, to) in parts of at most PIECE_MAX characters, never between the halves of a surrogate pair. */
function* parts(text: string, from: number, to: number): Generator<string, void, undefined> {
  while (from < to) {
    let end = Math.min(from + PIECE_MAX, to);
    if (end < to && isHighSurrogate(text.charCodeAt(end - 1))) end--;
    yield text.slice(from, end);
    from = end;
  }
}

/**
 * The text in slices whose token counts add up to the whole text's. Slices end where o200k's own
 * pre-tokenizer (the library's split pattern) ends a piece, since the tokenizer never merges across pieces,
 * but never after whitespace: the pattern's lookahead splits a whitespace run by what follows it. A piece
 * longer than PIECE_MAX characters (not ordinary text, whose pieces are words, numbers and punctuation; a
 * hostile body can hold megabytes of one letter) is counted in PIECE_MAX-character parts.
 */
export function* tokenizerSlices(text: string, sliceMax = SLICE_MAX): Generator<string, void, undefined> {
  let start = 0;
  let pos = 0;
  while (pos < text.length) {
    const windowEnd = Math.min(pos + WINDOW, text.length);
    const window = text.slice(pos, windowEnd);
    let scanned = 0;
    for (const match of window.matchAll(O200K_TOKEN_SPLIT_REGEX)) {
      const end = match.index + match[0].length;
      // A piece reaching the window's end may go on past it: the next window starts with it.
      if (end === window.length && windowEnd < text.length) break;
      const pieceStart = pos + match.index;
      if (end - match.index > PIECE_MAX) {
        if (pieceStart > start) yield text.slice(start, pieceStart);
        yield* parts(text, pieceStart, pos + end);
        start = pos + end;
      } else if (pos + end - start > sliceMax && pieceStart > start && !WHITESPACE.test(text[pieceStart - 1]!)) {
        yield text.slice(start, pieceStart);
        start = pieceStart;
      }
      scanned = end;
    }
    if (scanned === 0 && windowEnd < text.length) {
      // One piece fills the whole window.
      if (pos > start) yield text.slice(start, pos);
      let end = windowEnd;
      if (isHighSurrogate(text.charCodeAt(end - 1))) end--;
      yield* parts(text, pos, end);
      start = pos = end;
    } else {
      pos = scanned === 0 ? windowEnd : pos + scanned;
    }
  }
  if (start < text.length) yield text.slice(start);
}

/** The tokenizer's count of `text`; once it is over `cap`, counting stops and some number over `cap` is returned. */
async function countTokens(text: string, cap = Number.POSITIVE_INFINITY): Promise<number> {
  const { countTokens: count } = await (tokenizer ??= import("gpt-tokenizer"));
  let tokens = 0;
  for (const slice of tokenizerSlices(text)) {
    tokens += count(slice, SPECIAL_AS_TEXT);
    if (tokens > cap) break;
  }
  return tokens;
}

/** Tokens a message costs beyond its content (role, separators), as OpenAI's chat format adds. */
const PER_MESSAGE = 4;
/** A picture in a prompt: OpenAI's high-detail 1024² tile count, a conservative flat figure. */
const PER_IMAGE = 765;

interface PromptParts {
  text: string[];
  /** Parts counted as their JSON text (tool calls, content parts of other types). */
  json: unknown[];
  images: number;
  messages: number;
}

function collect(messages: readonly unknown[]): PromptParts {
  const parts: PromptParts = { text: [], json: [], images: 0, messages: messages.length };
  for (const message of messages) {
    if (message === null || typeof message !== "object") continue;
    const { content, tool_calls: toolCalls, name } = message as Record<string, unknown>;
    if (typeof name === "string") parts.text.push(name);
    if (typeof content === "string") parts.text.push(content);
    else if (Array.isArray(content)) {
      for (const part of content) {
        const p = part as Record<string, unknown> | null;
        if (p?.type === "text" && typeof p.text === "string") parts.text.push(p.text);
        else if (p?.type === "image_url" || p?.type === "input_image") parts.images += 1;
        else parts.json.push(part);
      }
    } else if (content !== undefined && content !== null) parts.json.push(content);
    if (toolCalls !== undefined) parts.json.push(toolCalls);
  }
  return parts;
}

/**
 * The length of JSON.stringify(value) for a parsed JSON value, walked with a stack of its own rather than
 * recursion, which a deeply nested body would overflow; strings are measured as JSON.stringify writes them.
 */
export function jsonLength(value: unknown): number {
  let length = 0;
  const todo: unknown[] = [value];
  while (todo.length > 0) {
    const item = todo.pop();
    if (item === null || typeof item !== "object") {
      // `undefined` only occurs in an array here (JSON.parse yields none): written as null.
      length += item === undefined ? 4 : JSON.stringify(item).length;
    } else if (Array.isArray(item)) {
      // The brackets, and a comma between elements.
      length += 2 + Math.max(0, item.length - 1);
      for (const element of item) todo.push(element);
    } else {
      let fields = 0;
      for (const [key, field] of Object.entries(item)) {
        if (field === undefined) continue;
        // The key's quoted text and its colon.
        length += JSON.stringify(key).length + 1;
        todo.push(field);
        fields++;
      }
      length += 2 + Math.max(0, fields - 1);
    }
  }
  return length;
}

/** Upper-bound-ish estimate without tokenizing: 3 characters a token (English averages about 4). */
export const estimateTextTokens = (text: string): number => Math.ceil(text.length / 3);

/** The same estimate for chat messages, with what each message and picture adds. */
export function estimatePromptTokens(messages: readonly unknown[], extra: readonly unknown[] = []): number {
  const parts = collect(messages);
  let chars = 0;
  for (const text of parts.text) chars += text.length;
  for (const item of parts.json) chars += jsonLength(item);
  for (const item of extra) if (item !== undefined) chars += jsonLength(item);
  return Math.ceil(chars / 3) + parts.messages * PER_MESSAGE + parts.images * PER_IMAGE;
}

/** The tokenizer's count of the same parts; used when billing without upstream usage or near a limit. */
export async function countPromptTokens(messages: readonly unknown[], extra: readonly unknown[] = []): Promise<number> {
  const parts = collect(messages);
  let tokens = parts.messages * PER_MESSAGE + parts.images * PER_IMAGE;
  for (const text of parts.text) tokens += await countTokens(text);
  // Recursive, but bounded: bodies nest at most server.max_json_depth deep (src/server/body.ts).
  for (const item of parts.json) tokens += await countTokens(JSON.stringify(item));
  for (const item of extra) if (item !== undefined) tokens += await countTokens(JSON.stringify(item));
  return tokens;
}

/** The tokenizer's count of one text; with `cap`, counting stops once the count is over it. */
export const countTextTokens = async (text: string, cap?: number): Promise<number> => (text.length === 0 ? 0 : countTokens(text, cap));

/** The local count of an answer without usage: the prompt by the tokenizer, plus the text it generated. */
export async function localUsage(countPrompt: () => Promise<number>, generated: string): Promise<UsageReport> {
  return { promptTokens: await countPrompt(), completionTokens: await countTextTokens(generated), cachedTokens: 0 };
}
