import type { StaffCasePage } from "../../../src/support/staff/staff-wire.js";
import { formatAge } from "./age.js";
import { modelName } from "./short-id.js";
import { fit, oneLine, truncate } from "./text.js";

// The queue's table: one line per case, fixed-width columns and the problem in whatever width is left.

export type CaseSummary = StaffCasePage["cases"][number];

interface Column {
  title: string;
  width: number;
  value(summary: CaseSummary, now: number): string;
}

const COLUMNS: Column[] = [
  { title: "status", width: 8, value: (c) => c.status },
  { title: "hold", width: 4, value: (c) => (c.staff_hold ? "hold" : "-") },
  { title: "handoff", width: 7, value: (c) => (c.handoff ? "handoff" : "-") },
  { title: "age", width: 8, value: (c, now) => formatAge(c.created_at, now) },
  { title: "locale", width: 6, value: (c) => c.locale },
  { title: "model", width: 16, value: (c) => modelName(c.model) },
];

/** Room for the cursor marker in front of every row. */
const MARKER = 2;

function row(cells: string[], last: string, width: number): string {
  const fixed = cells.map((cell, i) => fit(cell, COLUMNS[i]!.width)).join(" ");
  return truncate(`${fixed} ${last}`.trimEnd(), width - MARKER);
}

export function queueHeader(width: number): string {
  return (
    " ".repeat(MARKER) +
    row(
      COLUMNS.map((c) => c.title),
      "problem",
      width,
    )
  );
}

export function queueRow(summary: CaseSummary, now: number, width: number, selected: boolean): string {
  const cells = COLUMNS.map((c) => oneLine(c.value(summary, now)));
  return (selected ? "> " : "  ") + row(cells, oneLine(summary.problem ?? ""), width);
}
