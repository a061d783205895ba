import { cleanup, render } from "ink-testing-library";
import { afterEach, describe, expect, it } from "vitest";
import { QueueScreen } from "../../../worker-kit/tui/queue-screen.js";
import { fakeStaff, KEY, screenProps, summary, until } from "./tui-fakes.js";

const ids = (n: number, prefix: string) =>
  Array.from({ length: n }, (_, i) =>
    summary({ id: `${prefix}${i}`.padEnd(8, "0") + "-2222-4333-8444-555555555555", question: `${prefix} problem ${i}` }),
  );

afterEach(cleanup);

describe("QueueScreen", () => {
  it("shows one row per case with id, state, user, age and question", async () => {
    const staff = fakeStaff({
      listCases: async () => ({
        cases: [summary({ staff_hold: true, handoff: true }), summary({ id: "22222222-2222-4333-8444-555555555555", status: "resolved" })],
      }),
    });
    const { props, seen } = screenProps(staff);
    const { lastFrame } = render(<QueueScreen {...props} />);
    await until(() => lastFrame()!.includes("22222222"), "the rows");
    const lines = lastFrame()!.split("\n");
    expect(lines[0]).toMatch(/^ {2}id\s+state\s+user\s+age\s+question$/);
    expect(lines[1]).toMatch(/^> 11111111 held\s+ann@example.test\s+3h ago\s+Why did my request fail\?$/);
    expect(lines[2]).toMatch(/^ {2}22222222 resolved ann@example.test/);
    expect(staff.calls[0]).toEqual({ method: "listCases", args: [{ limit: 18, cursor: undefined }] });
    expect(seen.help.at(-1)).toContainEqual({ key: "enter", label: "open" });
    expect(seen.help.at(-1)).toContainEqual({ key: "/", label: "filter" });
  });

  it("moves the cursor with arrows and j/k, and enter opens the selected case", async () => {
    const staff = fakeStaff({ listCases: async () => ({ cases: ids(3, "c") }) });
    const { props, seen } = screenProps(staff);
    const { lastFrame, stdin } = render(<QueueScreen {...props} />);
    await until(() => lastFrame()!.includes("c problem 2"));
    const selected = (n: number) => until(() => new RegExp(`^> .*c problem ${n}$`, "m").test(lastFrame()!), `row ${n} selected`);
    for (const [key, row] of [
      [KEY.down, 1],
      ["j", 2],
      ["j", 2],
      [KEY.up, 1],
      ["k", 0],
      ["k", 0],
      [KEY.down, 1],
    ] as const) {
      stdin.write(key);
      await selected(row);
    }
    stdin.write(KEY.enter);
    await until(() => seen.routes.length > 0, "the route");
    expect(seen.routes).toEqual([{ screen: "case", caseId: ids(3, "c")[1]!.id, back: { stack: { cursors: [undefined] }, filter: "" } }]);
  });

  it("pages forward with next_cursor and back through the remembered cursors", async () => {
    const pages: Record<string, { cases: ReturnType<typeof ids>; next_cursor?: string }> = {
      first: { cases: ids(2, "a"), next_cursor: "cur-2" },
      "cur-2": { cases: ids(2, "b"), next_cursor: "cur-3" },
      "cur-3": { cases: ids(1, "z") },
    };
    const staff = fakeStaff({ listCases: async (page) => pages[page?.cursor ?? "first"]! });
    const { props, seen } = screenProps(staff);
    const { lastFrame, stdin } = render(<QueueScreen {...props} />);
    await until(() => lastFrame()!.includes("a problem 1"));
    stdin.write("n");
    await until(() => lastFrame()!.includes("b problem 1"), "page 2");
    expect(lastFrame()).toContain("page 2");
    stdin.write("n");
    await until(() => lastFrame()!.includes("z problem 0"), "page 3");
    expect(lastFrame()).toContain("last page");
    stdin.write("n");
    await until(() => seen.notices.includes("this is the last page"), "the last-page notice");
    stdin.write("p");
    await until(() => lastFrame()!.includes("b problem 0"), "back to page 2");
    stdin.write("p");
    await until(() => lastFrame()!.includes("a problem 0"), "back to page 1");
    const cursors = staff.calls.filter((c) => c.method === "listCases").map((c) => (c.args[0] as { cursor?: string }).cursor);
    expect(cursors).toEqual([undefined, "cur-2", "cur-3", "cur-2", undefined]);
  });

  it("shows only the rows that fit and refreshes with r", async () => {
    const staff = fakeStaff({ listCases: async (page) => ({ cases: ids(Math.min(page?.limit ?? 20, 30), "r") }) });
    const { props } = screenProps(staff, { rows: 6 });
    const { lastFrame, stdin } = render(<QueueScreen {...props} />);
    await until(() => lastFrame()!.includes("r problem 3"));
    expect(lastFrame()!.split("\n")).toHaveLength(6);
    stdin.write("r");
    await until(() => staff.calls.length === 2, "the refresh");
    expect(staff.calls[1]!.args[0]).toEqual({ limit: 4, cursor: undefined });
  });

  it("shows a failed first load as the stale mark, naming the gateway and the error", async () => {
    const staff = fakeStaff({
      listCases: async () => {
        throw new Error("connection refused");
      },
    });
    const { props } = screenProps(staff);
    const { lastFrame } = render(<QueueScreen {...props} />);
    await until(() => lastFrame()!.includes("stale since"), "the stale mark");
    expect(lastFrame()).toBe("stale since 12:00:00 UTC · http://gateway.test: connection refused");
  });
});
