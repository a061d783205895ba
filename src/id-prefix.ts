import { errors } from "./errors.js";

// Staff and operators name a case or an incident by its full id or by an unambiguous prefix of it, the short id
// the terminal UI and the CLI's tables show (docs/support.md, "Ids"). Pure: the range a prefix covers, and the
// verdict on what the database found in it.

/** The shortest prefix accepted: eight hex digits, the first group of a uuid (about 4 billion values). */
export const MIN_ID_PREFIX = 8;

const HEX = /^[0-9a-f]+$/;
const GROUPS = [8, 4, 4, 4, 12];

/** `hex` (32 digits) in the canonical 8-4-4-4-12 form. */
function canonical(hex: string): string {
  const parts: string[] = [];
  let at = 0;
  for (const size of GROUPS) {
    parts.push(hex.slice(at, at + size));
    at += size;
  }
  return parts.join("-");
}

export interface IdRange {
  /** The smallest uuid the input names, inclusive. */
  low: string;
  /** The largest, inclusive; equal to `low` for a full id. */
  high: string;
}

/**
 * The uuids an id or id prefix names, as an inclusive range (a uuid column's index serves it). A prefix is at
 * least `MIN_ID_PREFIX` hex digits, in any case, with or without the hyphens (where a uuid has them). Null
 * when the input cannot name an id: too short, not hex, or hyphens elsewhere.
 */
export function idRange(input: string): IdRange | null {
  const lower = input.trim().toLowerCase();
  const hex = lower.replaceAll("-", "");
  if (hex.length < MIN_ID_PREFIX || hex.length > 32 || !HEX.test(hex)) return null;
  if (lower !== hex && lower !== canonical(hex.padEnd(32, "0")).slice(0, lower.length)) return null;
  return { low: canonical(hex.padEnd(32, "0")), high: canonical(hex.padEnd(32, "f")) };
}

export type IdNoun = "case" | "incident";

/** What the database found in an input's range: how many ids, and the smallest of them. */
export interface IdMatches {
  count: number;
  id: string | null;
}

/**
 * The one id an input names: 404 `not_found` for none (and for an input that names nothing, saying what would), 400 `ambiguous_id`
 * naming how many matched for several.
 */
export function oneId(input: string, matches: IdMatches | null, noun: IdNoun): string {
  // An input too short to be a prefix (the `7c04` a person typed from memory) says what would do.
  if (matches === null) throw errors.notFound(`No such ${noun}: name it by its id or its first ${MIN_ID_PREFIX}+ hex digits.`);
  if (matches.count === 0 || matches.id === null) throw errors.notFound(`No such ${noun}.`);
  if (matches.count > 1) {
    throw errors.badRequest(`The id prefix ${input} matches ${matches.count} ${noun}s; give more of the id.`, "id", "ambiguous_id");
  }
  return matches.id;
}
