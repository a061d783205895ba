// A window of `height` lines over `total` lines, as a top offset that never scrolls past either end.

export function clampOffset(offset: number, total: number, height: number): number {
  return Math.max(0, Math.min(offset, total - Math.max(1, height)));
}

export function scrollBy(offset: number, delta: number, total: number, height: number): number {
  return clampOffset(clampOffset(offset, total, height) + delta, total, height);
}

export function visibleWindow<T>(lines: readonly T[], offset: number, height: number): T[] {
  const top = clampOffset(offset, lines.length, height);
  return lines.slice(top, top + Math.max(0, height));
}

/** "12-31/80" for a status line; empty when everything fits. */
export function scrollPosition(offset: number, total: number, height: number): string {
  if (total <= height) return "";
  const top = clampOffset(offset, total, height);
  return `${top + 1}-${Math.min(total, top + height)}/${total}`;
}
