// The queue's cursor pagination: the gateway only knows "the page after this cursor", so going back means
// remembering the cursors that led here. The first page has no cursor.

export interface PageStack {
  /** The cursor of each page seen, first page (undefined) first; the last one is the current page's. */
  readonly cursors: ReadonlyArray<string | undefined>;
}

export const firstPage: PageStack = { cursors: [undefined] };

export function currentCursor(stack: PageStack): string | undefined {
  return stack.cursors[stack.cursors.length - 1];
}

/** 1 for the first page. */
export function pageNumber(stack: PageStack): number {
  return stack.cursors.length;
}

/** The page after the current one, given the current page's `next_cursor` (absent on the last page: no move). */
export function nextPage(stack: PageStack, nextCursor: string | undefined): PageStack {
  return nextCursor === undefined ? stack : { cursors: [...stack.cursors, nextCursor] };
}

/** The page before the current one; the first page stays. */
export function previousPage(stack: PageStack): PageStack {
  return stack.cursors.length <= 1 ? stack : { cursors: stack.cursors.slice(0, -1) };
}
