// Fitting text into terminal cells. A character counts as one cell (code points, not UTF-16 units); wide East Asian
// characters are not measured, which at worst lets such a line wrap.

const ELLIPSIS = "…";

/** Newlines and runs of whitespace become one space, so a value never breaks the one-line layouts. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** At most `width` cells; a cut line ends with an ellipsis so the cut is visible. */
export function truncate(text: string, width: number): string {
  if (width <= 0) return "";
  const chars = Array.from(text);
  if (chars.length <= width) return text;
  return chars.slice(0, width - 1).join("") + ELLIPSIS;
}

/** Exactly `width` cells: truncated, or padded with spaces. */
export function fit(text: string, width: number): string {
  const cut = truncate(text, width);
  return cut + " ".repeat(Math.max(0, width - Array.from(cut).length));
}

/** Word-wraps each line of `text` to `width` cells; a word longer than the width is split. */
export function wrap(text: string, width: number): string[] {
  if (width <= 0) return [];
  const out: string[] = [];
  for (const paragraph of text.split(/\r?\n/)) {
    let line = "";
    for (const word of paragraph.split(/\s+/).filter((w) => w !== "")) {
      let rest = Array.from(word);
      while (rest.length > 0) {
        const lineLength = Array.from(line).length;
        const room = lineLength === 0 ? width : width - lineLength - 1;
        if (rest.length <= room) {
          line = lineLength === 0 ? rest.join("") : `${line} ${rest.join("")}`;
          rest = [];
        } else if (lineLength > 0) {
          out.push(line);
          line = "";
        } else {
          out.push(rest.slice(0, width).join(""));
          rest = rest.slice(width);
        }
      }
    }
    out.push(line);
  }
  return out;
}

/** `left` cut to leave room for `right` at the end of a `width`-cell line (a scroll position, a count). */
export function withRight(left: string, right: string, width: number): string {
  if (right === "") return truncate(left, width);
  const room = width - Array.from(right).length - 1;
  return room <= 0 ? truncate(right, width) : `${fit(left, room)} ${right}`;
}
