import { describe, expect, it } from "vitest";
import { formatTable, shortId, shortTime, type Column } from "../../cli/table.js";

// The CLI's tables: a header line, 120 columns unless --wide, cut only where a column may be.

interface Row {
  id: string;
  note: string | null;
  extra: string;
}

const columns: Column<Row>[] = [
  { header: "ID", cell: (r, wide) => shortId(r.id, wide) },
  { header: "NOTE", cell: (r) => r.note, flex: true },
  { header: "EXTRA", cell: (r) => r.extra, wideOnly: true },
];
const ID = "8cf298db-1c2e-4f3a-9b1d-0123456789ab";

describe("formatTable", () => {
  it("prints a header, then one row a line, with short ids and `-` for nothing", () => {
    expect(formatTable([{ id: ID, note: null, extra: "x" }], columns)).toEqual(["ID        NOTE", "8cf298db  -"]);
  });

  it("fits the width by cutting the flexible column with an ellipsis", () => {
    const lines = formatTable([{ id: ID, note: "n".repeat(300), extra: "x" }], columns, { width: 40 });
    expect(lines.every((l) => l.length <= 40)).toBe(true);
    expect(lines[1]).toBe(`8cf298db  ${"n".repeat(29)}…`);
  });

  it("fits 120 columns by default and never cuts a fixed column", () => {
    const wideNote = { id: ID, note: "word ".repeat(60), extra: "x" };
    expect(formatTable([wideNote], columns).every((l) => l.length <= 120)).toBe(true);
    const fixed: Column<Row>[] = [{ header: "ID", cell: (r) => r.id.repeat(5) }];
    expect(formatTable([wideNote], fixed)[1]).toBe(ID.repeat(5));
  });

  it("under --wide shows every column in full", () => {
    const lines = formatTable([{ id: ID, note: "n".repeat(300), extra: "x" }], columns, { wide: true });
    expect(lines[0]).toMatch(/^ID\s+NOTE\s+EXTRA$/);
    expect(lines[1]).toBe(`${ID}  ${"n".repeat(300)}  x`);
  });

  it("says (none) for no rows, and puts a multi-line cell on one line", () => {
    expect(formatTable([], columns)).toEqual(["(none)"]);
    expect(formatTable([{ id: ID, note: "a\n  b", extra: "" }], columns)[1]).toBe("8cf298db  a b");
  });
});

describe("short forms", () => {
  it("shows 8 hex digits of an id and a minute of a time, in full under --wide", () => {
    expect(shortId(ID, false)).toBe("8cf298db");
    expect(shortId(ID, true)).toBe(ID);
    expect(shortId(null, false)).toBeNull();
    expect(shortTime("2026-11-29T12:30:45.123Z", false)).toBe("2026-11-29 12:30");
    expect(shortTime("2026-11-29T12:30:45.123Z", true)).toBe("2026-11-29T12:30:45.123Z");
  });
});
