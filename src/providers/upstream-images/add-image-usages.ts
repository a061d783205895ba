// Several image answers' usages as one: an image request served as n calls (Gemini), or an edit stream's completed
// images (OpenAI), each reporting its own usage; the image quota (src/billing/image-quota.ts) classifies the sum.

const isCount = (value: unknown): value is number => typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** What a field that is not a count sums to: the image quota classifies the usage as `inconsistent`. */
export const INCONSISTENT_COUNT = -1;

/**
 * Two usages added up: a count both have, summed; an object, field by field. What only one of them reports is left
 * out, so the sum is never more complete than its parts (the quota then falls back, never undercharging); one
 * without usage makes the whole absent, and a field that is not a count on either side makes its sum inconsistent.
 */
export function addImageUsages(a: unknown, b: unknown): unknown {
  if (a === undefined || a === null || b === undefined || b === null) return undefined;
  if (typeof a === "number" && typeof b === "number") return isCount(a) && isCount(b) ? a + b : INCONSISTENT_COUNT;
  if (!isObject(a) || !isObject(b)) return undefined;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(a)) {
    if (!(key in b)) continue;
    const value = addImageUsages(a[key], b[key]);
    if (value !== undefined) out[key] = value;
  }
  return out;
}
