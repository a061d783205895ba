import type { StaffCasePage } from "../../wire/staff.js";
import { formatAge } from "./age.js";
import { modelName, shortId } from "./short-id.js";
import { fit, oneLine, truncate } from "./text.js";

// The queue's table: one line per case, fixed-width columns and the question in whatever width is left. The model
// column only shows on a terminal wide enough to leave the question room (120 columns).

export type CaseSummary = StaffCasePage["cases"][number];

interface Column {
  title: string;
  width: number;
  value(summary: CaseSummary, now: number): string;
}

/** One word for where a case stands: a staff hold first, then a user's call for staff, else its status. */
export function caseState(c: CaseSummary): string {
  if (c.status === "resolved") return "resolved";
  if (c.staff_hold) return "held";
  return c.handoff ? "handoff" : "open";
}

/** Who asked: the owner's email, or the chat channel of a chat-platform case. */
export function caseUser(c: CaseSummary): string {
  if (c.owner_email !== null) return c.owner_email;
  return c.source_ref === null ? "-" : `chat ${c.source_ref}`;
}

/** What was asked: the first user message, else the card's problem once an answer wrote one. */
export function caseQuestion(c: CaseSummary): string {
  return c.question ?? (c.problem === null ? "" : `(card) ${c.problem}`);
}

const BASE: Column[] = [
  { title: "id", width: 8, value: (c) => shortId(c.id) },
  { title: "state", width: 8, value: caseState },
  { title: "user", width: 20, value: caseUser },
  { title: "age", width: 8, value: (c, now) => formatAge(c.created_at, now) },
];
const MODEL: Column = { title: "model", width: 16, value: (c) => modelName(c.model) };

/** From this width on (a wide terminal), the model column fits and the question keeps over 50 cells. */
const MODEL_FROM = 120;

const columnsFor = (width: number) => (width >= MODEL_FROM ? [...BASE, MODEL] : BASE);

/** Room for the cursor marker in front of every row. */
const MARKER = 2;

function row(columns: Column[], cells: string[], last: string, width: number): string {
  const fixed = cells.map((cell, i) => fit(cell, columns[i]!.width)).join(" ");
  return truncate(`${fixed} ${last}`.trimEnd(), width - MARKER);
}

export function queueHeader(width: number): string {
  const columns = columnsFor(width);
  return (
    " ".repeat(MARKER) +
    row(
      columns,
      columns.map((c) => c.title),
      "question",
      width,
    )
  );
}

export function queueRow(summary: CaseSummary, now: number, width: number, selected: boolean): string {
  const columns = columnsFor(width);
  const cells = columns.map((c) => oneLine(c.value(summary, now)));
  return (selected ? "> " : "  ") + row(columns, cells, oneLine(caseQuestion(summary)), width);
}
