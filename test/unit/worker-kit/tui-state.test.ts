import { describe, expect, it } from "vitest";
import { formatAge } from "../../../worker-kit/tui/state/age.js";
import { caseLines, caseStatusLine } from "../../../worker-kit/tui/state/case-lines.js";
import { helpLines } from "../../../worker-kit/tui/state/help.js";
import { currentCursor, firstPage, nextPage, pageNumber, previousPage } from "../../../worker-kit/tui/state/page-stack.js";
import { queueHeader, queueRow } from "../../../worker-kit/tui/state/queue-rows.js";
import { matchesFilter, selectedIndex } from "../../../worker-kit/tui/state/queue-filter.js";
import { modelName, shortId } from "../../../worker-kit/tui/state/short-id.js";
import { staleLine } from "../../../worker-kit/tui/state/stale.js";
import { clampOffset, scrollBy, scrollPosition, visibleWindow } from "../../../worker-kit/tui/state/scroll.js";
import { fit, oneLine, truncate, withRight, wrap } from "../../../worker-kit/tui/state/text.js";
import { detail, NOW, summary } from "./tui-fakes.js";

describe("text", () => {
  it("truncates with an ellipsis, counting code points", () => {
    expect(truncate("hello", 5)).toBe("hello");
    expect(truncate("hello world", 6)).toBe("hello…");
    expect(truncate("héllo wörld", 3)).toBe("hé…");
    expect(truncate("abc", 0)).toBe("");
  });
  it("fits, joins lines and keeps a right-hand part", () => {
    expect(fit("ab", 4)).toBe("ab  ");
    expect(fit("abcdef", 4)).toBe("abc…");
    expect(oneLine(" a\n\tb  c ")).toBe("a b c");
    expect(withRight("status", "1-4/9", 14)).toBe("status   1-4/9");
    expect(withRight("a long status line", "1-4/9", 14)).toBe("a long … 1-4/9");
    expect(withRight("status", "", 4)).toBe("sta…");
  });
  it("word-wraps paragraphs and splits words longer than the width", () => {
    expect(wrap("the quick brown fox", 9)).toEqual(["the quick", "brown fox"]);
    expect(wrap("a\n\nb", 5)).toEqual(["a", "", "b"]);
    expect(wrap("abcdefghij", 4)).toEqual(["abcd", "efgh", "ij"]);
  });
});

describe("formatAge", () => {
  it.each([
    ["2026-03-01T12:00:00Z", "just now"],
    ["2026-03-01T11:59:59.500Z", "just now"],
    ["2026-03-01T11:59:48Z", "12s ago"],
    ["2026-03-01T11:59:15Z", "45s ago"],
    ["2026-03-01T11:48:00Z", "12m ago"],
    ["2026-03-01T09:00:00Z", "3h ago"],
    ["2026-02-24T12:00:00Z", "5d ago"],
    ["2026-03-01T12:05:00Z", "just now"],
    ["not a date", "?"],
  ])("%s is %s", (iso, age) => {
    expect(formatAge(iso, NOW)).toBe(age);
  });
  it("never reads 'now ago' in a case's lines", () => {
    const d = detail({ created_at: new Date(NOW).toISOString() });
    d.messages[0]!.created_at = new Date(NOW).toISOString();
    const text = [caseStatusLine(d, 200, NOW), ...caseLines(d, 200, NOW).map((l) => l.text)].join("\n");
    expect(text).toContain("opened just now");
    expect(text).not.toMatch(/now ago|ago ago/);
  });
});

describe("short ids and model names", () => {
  it("shows a case by its first 8 hex digits and an empty model as (none)", () => {
    expect(shortId("8cf298db-2222-4333-8444-555555555555")).toBe("8cf298db");
    expect(modelName("")).toBe("(none)");
    expect(modelName(null)).toBe("(none)");
    expect(modelName("gpt-4o-mini")).toBe("gpt-4o-mini");
  });
  it("names a missing model in the case's request facts instead of leaving ' ·  · '", () => {
    const d = detail();
    d.case.facts!.model = "";
    const route = caseLines(d, 200, NOW).find((l) => l.text.startsWith("route:"))!.text;
    expect(route).toBe("route: /v1/chat/completions · (none) · openai");
  });
});

describe("page stack", () => {
  it("remembers the cursors that led to a page and walks back through them", () => {
    const two = nextPage(firstPage, "c2");
    const three = nextPage(two, "c3");
    expect([currentCursor(three), pageNumber(three)]).toEqual(["c3", 3]);
    expect(nextPage(three, undefined)).toBe(three);
    expect(currentCursor(previousPage(three))).toBe("c2");
    expect(currentCursor(previousPage(two))).toBeUndefined();
    expect(previousPage(firstPage)).toBe(firstPage);
  });
});

describe("scroll", () => {
  const lines = Array.from({ length: 10 }, (_, i) => i);
  it("keeps the window inside the lines", () => {
    expect(clampOffset(-3, 10, 4)).toBe(0);
    expect(clampOffset(9, 10, 4)).toBe(6);
    expect(clampOffset(5, 3, 4)).toBe(0);
    expect(scrollBy(5, 4, 10, 4)).toBe(6);
    expect(scrollBy(2, -4, 10, 4)).toBe(0);
    expect(visibleWindow(lines, 8, 4)).toEqual([6, 7, 8, 9]);
  });
  it("says where the window is only when the lines do not fit", () => {
    expect(scrollPosition(2, 10, 4)).toBe("3-6/10");
    expect(scrollPosition(0, 3, 4)).toBe("");
  });
});

describe("help lines", () => {
  it("wraps key items onto as many lines as the width needs", () => {
    const keys = [
      { key: "1", label: "queue" },
      { key: "2", label: "incidents" },
      { key: "q", label: "quit" },
    ];
    expect(helpLines(keys, 80)).toEqual(["1 queue  2 incidents  q quit"]);
    expect(helpLines(keys, 20)).toEqual(["1 queue  2 incidents", "q quit"]);
    expect(helpLines([], 20)).toEqual([]);
  });
});

describe("queue rows", () => {
  it("lines up id, state, user and age, and gives the question the rest of the width", () => {
    expect(queueHeader(80)).toBe("  id       state    user                 age      question");
    const row = queueRow(summary({ staff_hold: true, question: "line one\nline two" }), NOW, 80, true);
    expect(row).toBe("> 11111111 held     ann@example.test     3h ago   line one line two");
    const narrow = queueRow(summary({ question: "x".repeat(100) }), NOW, 60, false);
    expect(narrow).toHaveLength(60);
    expect(narrow.endsWith("…")).toBe(true);
  });
  it("adds the model on a wide terminal and names who asked on a chat-platform case", () => {
    expect(queueHeader(119)).not.toContain("model");
    expect(queueHeader(120)).toMatch(/age {6}model {12}question$/);
    const chat = summary({ owner_email: null, owner_user_id: null, source_ref: "chan-7", question: null, model: "" });
    expect(queueRow(chat, NOW, 140, false)).toMatch(/^ {2}11111111 open {5}chat chan-7 +3h ago {3}\(none\) +\(card\) Upstream timed out$/);
  });
});

describe("queue filter", () => {
  const rows = [
    summary({ id: "aaaaaaaa-2222-4333-8444-555555555555", owner_email: "bob@example.test", question: "Refund please" }),
    summary({ id: "bbbbbbbb-2222-4333-8444-555555555555", status: "resolved", question: "Why 502?" }),
  ];
  it.each([
    ["", 2],
    ["BOB", 1],
    ["refund", 1],
    ["bbbbbb", 1],
    ["resolved", 1],
    ["nothing like it", 0],
  ])("%j matches %i", (filter, n) => {
    expect(rows.filter((r) => matchesFilter(r, filter))).toHaveLength(n);
  });
  it("keeps the cursor on the same case, else on the nearest row", () => {
    expect(selectedIndex(rows, rows[1]!.id, 0)).toBe(1);
    expect(selectedIndex(rows, "gone", 5)).toBe(1);
    expect(selectedIndex([], null, 3)).toBe(0);
  });
});

describe("stale mark", () => {
  it("says since when and why, naming the gateway once", () => {
    const since = Date.parse("2026-03-01T12:04:05Z");
    expect(staleLine({ since, error: "fetch failed" }, "http://gw:8080")).toBe("stale since 12:04:05 UTC · http://gw:8080: fetch failed");
    expect(staleLine({ since, error: "gateway http://gw:8080 unreachable" }, "http://gw:8080")).toBe(
      "stale since 12:04:05 UTC · gateway http://gw:8080 unreachable",
    );
  });
});

describe("case lines", () => {
  it("never exceeds the width and holds every section", () => {
    const d = detail({ incident_summary: "A provider outage" });
    d.messages.push({ role: "staff", content: "y".repeat(300), author: "admin:u1", created_at: "2026-03-01T11:00:00Z" });
    const lines = caseLines(d, 40, NOW);
    for (const line of lines) expect(line.text.length).toBeLessThanOrEqual(40);
    const headings = lines.filter((l) => l.tone === "heading").map((l) => l.text);
    expect(headings).toEqual(["Request", "Card", "Evidence", "Usage", "Incident summary", "Drafts", "Jobs", "Transcript"]);
    expect(lines.map((l) => l.text)).toContain("staff (admin:u1) · 1h ago");
  });
  it("says what is missing rather than leaving a section empty", () => {
    const d = detail({ facts: null, card: null, request_id: null });
    d.drafts = [];
    d.jobs = [];
    d.evidence = [];
    d.history_truncated = true;
    const text = caseLines(d, 80, NOW).map((l) => l.text);
    expect(text).toEqual(expect.arrayContaining(["no request cited", "no card yet", "none", "(older messages not shown)"]));
  });
  it("puts the case's state in the status line", () => {
    const line = caseStatusLine(detail({ staff_hold: true, handoff: true, source_ref: "chan-1" }), 200, NOW);
    expect(line).toBe("case 11111111 · open · staff hold · handoff · en · chat chan-1 · rev 1 · opened 3h ago");
  });
});
