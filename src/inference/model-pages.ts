import { errors } from "../errors.js";

// Pages of a model list for the SDKs that page it (Anthropic: `after_id`/`before_id`, Gemini: `pageToken`). The
// cursor is a model ID, so a page boundary stays put when models before it are added or removed; a cursor naming
// a model no longer listed is refused rather than silently restarting the list.

export interface Page<T> {
  items: T[];
  /** More items past this page, in the direction it was asked. */
  more: boolean;
}

const unknownCursor = (param: string) =>
  errors.badRequest(`Invalid ${param}: it names no model of this list; start again without it.`, param, "invalid_cursor");

/** At most `limit` items after the one whose ID is `afterId` (from the start without it). */
export function pageAfter<T extends { id: string }>(
  items: readonly T[],
  limit: number,
  afterId: string | undefined,
  param: string,
): Page<T> {
  let start = 0;
  if (afterId !== undefined) {
    start = items.findIndex((item) => item.id === afterId) + 1;
    if (start === 0) throw unknownCursor(param);
  }
  return { items: items.slice(start, start + limit), more: start + limit < items.length };
}

/** At most `limit` items right before the one whose ID is `beforeId`, in list order. */
export function pageBefore<T extends { id: string }>(items: readonly T[], limit: number, beforeId: string, param: string): Page<T> {
  const end = items.findIndex((item) => item.id === beforeId);
  if (end < 0) throw unknownCursor(param);
  const start = Math.max(0, end - limit);
  return { items: items.slice(start, end), more: start > 0 };
}
