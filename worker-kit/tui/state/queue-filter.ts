import { caseQuestion, caseState, caseUser, type CaseSummary } from "./queue-rows.js";

// The queue's `/` filter: a case matches when the text is part of its id, user, question or state (any case).

export function matchesFilter(summary: CaseSummary, filter: string): boolean {
  const needle = filter.trim().toLowerCase();
  if (needle === "") return true;
  const haystack = [summary.id, caseUser(summary), caseQuestion(summary), caseState(summary), summary.status];
  return haystack.some((text) => text.toLowerCase().includes(needle));
}

/** The row to select after the list changed: the same case when it is still there, else the nearest row. */
export function selectedIndex(rows: readonly CaseSummary[], selectedId: string | null, fallback: number): number {
  const found = selectedId === null ? -1 : rows.findIndex((r) => r.id === selectedId);
  if (found >= 0) return found;
  return Math.max(0, Math.min(fallback, rows.length - 1));
}

/** The first row shown so that `selected` is inside a window of `height` rows. */
export function windowStart(selected: number, height: number): number {
  return Math.max(0, selected - Math.max(1, height) + 1);
}
