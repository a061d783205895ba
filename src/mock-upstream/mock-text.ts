import { createHash } from "node:crypto";

/**
 * The rules every mock route shares, whatever its wire shape: replies are words picked by a sha256 of the
 * request, and tokens are counted by one documented formula (docs/mock-upstream.md), so a test can predict
 * any route's usage and the same request always gets byte-identical answers.
 */

const WORDS = [
  "amber",
  "brook",
  "cedar",
  "delta",
  "ember",
  "fjord",
  "grove",
  "harbor",
  "iris",
  "juniper",
  "kestrel",
  "lumen",
  "meadow",
  "nimbus",
  "orchid",
  "pebble",
];

/** The arguments of every mock function call, whichever function is called. */
export const TOOL_ARGUMENTS = { location: "Paris" } as const;

/** sha256 of the JSON of `value`: the seed of everything a route answers. */
export function digestOf(value: unknown): Buffer {
  return createHash("sha256").update(JSON.stringify(value)).digest();
}

export interface Reply {
  /** Text deltas: the first carries the `Mock reply <hex>:` prefix and the first word, each next one ` word`. */
  pieces: string[];
  /** Completion tokens: one per word, the prefix is free. */
  words: number;
  /** The cap cut the reply short of its natural length. */
  truncated: boolean;
}

/**
 * 1 + 30 digest bytes: one picks the natural length (5..30 words), one picks each word. The cap does not enter
 * the digest, so a capped reply is a prefix of the uncapped one.
 */
export function replyOf(digest: Buffer, cap?: number | null): Reply {
  const natural = 5 + (digest[0]! % 26);
  const count = Math.min(natural, cap ?? natural);
  const prefix = `Mock reply ${digest.toString("hex").slice(0, 8)}: `;
  const pieces = Array.from({ length: count }, (_, i) => (i === 0 ? prefix : " ") + WORDS[digest[i + 1]! % WORDS.length]!);
  return { pieces, words: count, truncated: count < natural };
}

/** A string counts as itself, absent or null content as nothing, anything else (parts, blocks) as its JSON. */
function contentChars(content: unknown): number {
  if (content === undefined || content === null) return 0;
  return (typeof content === "string" ? content : JSON.stringify(content)).length;
}

/** The mock's tokenizer: 4 characters per token, rounded up. */
export function charTokens(chars: number): number {
  return Math.ceil(chars / 4);
}

/** Prompt rule: ceil(characters of all contents / 4) + 3 per message, one content per message. */
export function promptTokens(contents: unknown[]): number {
  const chars = contents.reduce<number>((sum, content) => sum + contentChars(content), 0);
  return charTokens(chars) + 3 * contents.length;
}

/** A function call costs its name and arguments at 4 characters per token. */
export function toolCallTokens(name: string, args: string): number {
  return charTokens(name.length + args.length);
}

/** The text of a content: a string, or the `text` fields of its parts (any vendor's part shape). */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part: unknown) => {
      const text = (part as { text?: unknown } | null)?.text;
      return typeof text === "string" ? text : "";
    })
    .join(" ");
}

/** A tool choice in vendor-neutral terms: each route maps its own syntax onto this. */
export type ToolChoice = "auto" | "none" | "required" | { name: string };

/**
 * Which function to call, if any: a named choice, else the first function when one is required or the last
 * user turn asks about the weather.
 */
export function chosenFunction(functions: string[], choice: ToolChoice, lastUserText: string | undefined): string | undefined {
  if (functions.length === 0 || choice === "none") return undefined;
  if (typeof choice === "object") return choice.name;
  const asksWeather = lastUserText !== undefined && /\bweather\b/i.test(lastUserText);
  return asksWeather || choice === "required" ? functions[0] : undefined;
}

/** Streamed arguments come in slices this long, so clients have to reassemble them as with the real APIs. */
export function argumentSlices(args: string, size = 8): string[] {
  const slices: string[] = [];
  for (let i = 0; i < args.length; i += size) slices.push(args.slice(i, i + size));
  return slices;
}
