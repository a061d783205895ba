// Tables for people (`--json` is the scripting interface): a header line, one row a line, fitted to 120 columns
// unless `--wide` asks for every column at its full width. Pure: lines in, lines out, so it is tested without a
// process.

/** The width a table fits by default: a terminal split in two, or a CI log, still reads it. */
export const TABLE_WIDTH = 120;
const GAP = "  ";
/** A flexible column is never cut below this (or its header, if longer). */
const MIN_FLEX = 10;

export interface Column<R> {
  header: string;
  /** The cell's text; `wide` is true under `--wide` (full ids and timestamps). Null and undefined print as `-`. */
  cell: (row: R, wide: boolean) => string | number | boolean | null | undefined;
  /** May be cut (with `…`) to fit the width; the others never are. */
  flex?: boolean;
  /** Shown under `--wide` only. */
  wideOnly?: boolean;
}

export interface TableOptions {
  wide?: boolean;
  width?: number;
}

const text = (v: string | number | boolean | null | undefined) =>
  v === null || v === undefined || v === "" ? "-" : String(v).replace(/\s+/g, " ").trim();

const cut = (v: string, width: number) => (v.length <= width ? v : `${v.slice(0, Math.max(0, width - 1))}…`);

/** The table's lines, header first; `(none)` alone for no rows. */
export function formatTable<R>(rows: R[], columns: Column<R>[], options: TableOptions = {}): string[] {
  if (rows.length === 0) return ["(none)"];
  const wide = options.wide === true;
  const shown = columns.filter((c) => wide || !c.wideOnly);
  const cells = rows.map((row) => shown.map((c) => text(c.cell(row, wide))));
  const widths = shown.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i]!.length)));
  if (!wide) fit(widths, shown, options.width ?? TABLE_WIDTH);
  const line = (values: string[]) =>
    values
      .map((v, i) => cut(v, widths[i]!).padEnd(widths[i]!))
      .join(GAP)
      .trimEnd();
  return [line(shown.map((c) => c.header)), ...cells.map(line)];
}

/** Narrows the widest flexible column, one character at a time, until the row fits or none can give more. */
function fit<R>(widths: number[], columns: Column<R>[], width: number): void {
  const floor = columns.map((c) => Math.max(c.header.length, MIN_FLEX));
  let over = widths.reduce((a, b) => a + b, 0) + GAP.length * (widths.length - 1) - width;
  while (over > 0) {
    let widest = -1;
    columns.forEach((c, i) => {
      if (c.flex && widths[i]! > floor[i]! && (widest < 0 || widths[i]! > widths[widest]!)) widest = i;
    });
    if (widest < 0) return;
    widths[widest] = widths[widest]! - 1;
    over -= 1;
  }
}

/** An id as the tables show it: its first 8 hex digits (a prefix every command accepts), whole under `--wide`. */
export const shortId = (id: string | null, wide: boolean) => (id === null ? null : wide ? id : id.slice(0, 8));

/** A timestamp as the tables show it: `2026-11-29 12:30` (UTC), the ISO text under `--wide`. */
export const shortTime = (iso: string | null, wide: boolean) => (iso === null ? null : wide ? iso : iso.slice(0, 16).replace("T", " "));
