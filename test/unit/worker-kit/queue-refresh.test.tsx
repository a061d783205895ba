import { cleanup, render } from "ink-testing-library";
import { afterEach, describe, expect, it } from "vitest";
import { QueueScreen } from "../../../worker-kit/tui/queue-screen.js";
import { fakeStaff, KEY, screenProps, summary, until, type Summary } from "./tui-fakes.js";

// The queue reads itself again every refreshMs (short here), keeps its cursor on the same case, marks its data
// stale when the gateway cannot be read, and holds still while a filter is being typed.

afterEach(cleanup);

const row = (n: number, overrides: Partial<Summary> = {}) =>
  summary({ id: `${n}`.repeat(8) + "-2222-4333-8444-555555555555", question: `question ${n}`, ...overrides });

const listCalls = (staff: ReturnType<typeof fakeStaff>) => staff.calls.filter((c) => c.method === "listCases").length;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("QueueScreen refresh", () => {
  it("shows a new case without r and keeps the cursor on the case it was on", async () => {
    let answer = [row(1), row(2)];
    const staff = fakeStaff({ listCases: async () => ({ cases: answer }) });
    const { props } = screenProps(staff, { refreshMs: 40 });
    const { lastFrame, stdin } = render(<QueueScreen {...props} />);
    await until(() => lastFrame()!.includes("question 2"), "the rows");
    stdin.write("j");
    await until(() => /^> 22222222/m.test(lastFrame()!), "row 2 selected");
    answer = [row(3), row(1), row(2)];
    await until(() => lastFrame()!.includes("question 3"), "the new case, unasked");
    expect(lastFrame()).toMatch(/^> 22222222/m);
  });

  it("keeps the last rows under a stale mark while the gateway fails, and drops the mark on the next success", async () => {
    let failing = false;
    const staff = fakeStaff({
      listCases: async () => {
        if (failing) throw new Error("fetch failed");
        return { cases: [row(1)] };
      },
    });
    const { props, seen } = screenProps(staff, { refreshMs: 40 });
    const { lastFrame } = render(<QueueScreen {...props} />);
    await until(() => lastFrame()!.includes("question 1"), "the rows");
    const clearedBefore = seen.cleared;
    failing = true;
    await until(() => lastFrame()!.includes("stale since"), "the stale mark");
    expect(lastFrame()).toContain("question 1");
    expect(lastFrame()).toMatch(/stale since 12:00:00 UTC · http:\/\/gateway\.test: fetch failed$/m);
    failing = false;
    await until(() => !lastFrame()!.includes("stale since"), "the mark gone");
    expect(lastFrame()).toContain("page 1 · 1 case");
    // Each good read clears the shell's error line: an old error never stays under fresh data.
    expect(seen.cleared).toBeGreaterThan(clearedBefore);
  });

  it("holds still while the filter is typed, filters on id, user, question and state, and esc clears it", async () => {
    const staff = fakeStaff({
      listCases: async () => ({ cases: [row(1, { owner_email: "bob@example.test" }), row(2, { status: "resolved" }), row(3)] }),
    });
    const { props, seen } = screenProps(staff, { refreshMs: 30 });
    const { lastFrame, stdin } = render(<QueueScreen {...props} />);
    await until(() => lastFrame()!.includes("question 3"), "the rows");
    stdin.write("/");
    await until(() => lastFrame()!.includes("> filter:"), "the filter field");
    expect(seen.capturing.at(-1)).toBe(true);
    const calls = listCalls(staff);
    await pause(300);
    expect(listCalls(staff)).toBe(calls);
    // Typed as one chunk: every key counts.
    stdin.write("BOB");
    await until(() => lastFrame()!.includes("filter: BOB"), "the typed filter");
    stdin.write(KEY.enter);
    await until(() => seen.capturing.at(-1) === false, "the keys given back");
    expect(lastFrame()).toContain("question 1");
    expect(lastFrame()).not.toContain("question 3");
    expect(lastFrame()).toContain("1 match");
    await until(() => listCalls(staff) > calls, "refreshing again");
    // While a filter is on, the page is the largest the gateway gives.
    expect(staff.calls.at(-1)!.args[0]).toEqual({ limit: 100, cursor: undefined });
    stdin.write("/");
    await until(() => lastFrame()!.includes("> filter: BOB"), "the field again");
    stdin.write(`\u007F\u007F\u007Fresolved${KEY.enter}`);
    await until(() => lastFrame()!.includes("filter: resolved") && !lastFrame()!.includes("question 1"), "the state filter");
    expect(lastFrame()).toContain("question 2");
    stdin.write(KEY.escape);
    await until(() => lastFrame()!.includes("question 3"), "the filter cleared");
    expect(lastFrame()).not.toContain("filter:");
  });

  it("puts the cursor on the case it comes back to, on the page and with the filter it left", async () => {
    const staff = fakeStaff({ listCases: async () => ({ cases: [row(1), row(2), row(3)] }) });
    const { props } = screenProps(staff);
    const back = { stack: { cursors: [undefined, "cur-2"] }, filter: "question" };
    const { lastFrame } = render(<QueueScreen {...props} focus={row(3).id} {...back} />);
    await until(() => lastFrame()!.includes("question 3"), "the rows");
    expect(lastFrame()).toMatch(/^> 33333333/m);
    expect(lastFrame()).toContain("filter: question");
    expect(lastFrame()).toContain("page 2");
    expect(staff.calls[0]!.args[0]).toEqual({ limit: 100, cursor: "cur-2" });
  });
});
