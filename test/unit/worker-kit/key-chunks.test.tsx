import { cleanup, render } from "ink-testing-library";
import { afterEach, describe, expect, it } from "vitest";
import { QueueScreen } from "../../../worker-kit/tui/queue-screen.js";
import { CaseScreen } from "../../../worker-kit/tui/case-screen.js";
import { fakeStaff, KEY, screenProps, summary, until, CASE_ID } from "./tui-fakes.js";

// Several keys read at once (a paste, keys typed faster than a frame): Ink hands them over as one string. Each
// must count, in order, each seeing what the one before changed.

afterEach(cleanup);

const rows = (n: number) =>
  Array.from({ length: n }, (_, i) => summary({ id: `${i}`.repeat(8) + "-2222-4333-8444-555555555555", question: `problem ${i}` }));

describe("keys in one chunk", () => {
  it("'jj' moves the cursor twice and 'jjk\\r' opens the row it ends on", async () => {
    const staff = fakeStaff({ listCases: async () => ({ cases: rows(4) }) });
    const { props, seen } = screenProps(staff);
    const { lastFrame, stdin } = render(<QueueScreen {...props} />);
    await until(() => lastFrame()!.includes("problem 3"), "the rows");
    stdin.write("jj");
    await until(() => /^> .*problem 2$/m.test(lastFrame()!), "row 2 selected");
    stdin.write(`jjk${KEY.enter}`);
    await until(() => seen.routes.length > 0, "the route");
    expect(seen.routes).toMatchObject([{ screen: "case", caseId: rows(4)[2]!.id }]);
  });

  it("'xy' on a case asks to resolve and confirms it", async () => {
    const staff = fakeStaff();
    const { props, seen } = screenProps(staff, { rows: 200 });
    const { lastFrame, stdin } = render(<CaseScreen {...props} caseId={CASE_ID} />);
    await until(() => lastFrame()!.includes("Transcript"), "the case");
    stdin.write("xy");
    await until(() => staff.calls.some((c) => c.method === "change"), "the resolve");
    expect(staff.calls.filter((c) => c.method === "change").map((c) => c.args)).toEqual([[CASE_ID, "resolve"]]);
    await until(() => seen.notices.includes("resolved: R reopens it"), "the notice");
  });
});
