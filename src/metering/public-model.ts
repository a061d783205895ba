import type { JsonResult } from "../providers/types.js";
import { applyEdits, findMembers } from "./json-members.js";

/**
 * An upstream JSON text (`parsed` is its parse) with the public model ID as its top-level `member` (`model`,
 * Gemini's `modelVersion`), serialised again only when the edit in the text would be ambiguous.
 */
export function withPublicModelIn(raw: string, parsed: Record<string, unknown>, publicModel: string, member = "model"): string {
  const found = findMembers(raw, [member])?.get(member);
  if (found) return applyEdits(raw, [{ start: found.valueStart, end: found.valueEnd, text: JSON.stringify(publicModel) }]);
  parsed[member] = publicModel;
  return JSON.stringify(parsed);
}

/** The answer as the client gets it: the upstream's text with the public model ID put in. */
export const withPublicModel = (answer: JsonResult, publicModel: string, member = "model"): string =>
  withPublicModelIn(answer.raw, answer.body, publicModel, member);
