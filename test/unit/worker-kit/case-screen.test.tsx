import { cleanup, render } from "ink-testing-library";
import { afterEach, describe, expect, it } from "vitest";
import { GatewayHttpError } from "../../../worker-kit/client/errors.js";
import { CaseScreen } from "../../../worker-kit/tui/case-screen.js";
import { CASE_ID, detail, fakeStaff, KEY, screenProps, until } from "./tui-fakes.js";

afterEach(cleanup);

function open(staff: ReturnType<typeof fakeStaff>, overrides: Parameters<typeof screenProps>[1] = {}) {
  const { props, seen } = screenProps(staff, { rows: 200, ...overrides });
  const ui = render(<CaseScreen {...props} caseId={CASE_ID} />);
  return { ...ui, seen };
}

const callsOf = (staff: ReturnType<typeof fakeStaff>, method: string) => staff.calls.filter((c) => c.method === method).map((c) => c.args);

describe("CaseScreen", () => {
  it("shows the status line and every section", async () => {
    const staff = fakeStaff();
    const { lastFrame } = open(staff);
    await until(() => lastFrame()!.includes("Transcript"), "the case");
    const frame = lastFrame()!;
    expect(frame.split("\n")[0]).toMatch(/^case 11111111 · open · automatic · en · dashboard · rev 1 · opened 3h ago/);
    for (const section of ["Request", "Card", "Evidence", "Usage", "Drafts", "Jobs", "Transcript"]) {
      expect(frame).toMatch(new RegExp(`^${section}$`, "m"));
    }
    expect(frame).toContain("status: 504 · upstream_timeout / upstream");
    expect(frame).toContain("next step: retry with a smaller prompt");
    expect(frame).toContain('request_fact ev1: {"status":504}');
    expect(frame).toContain("cost: unknown");
    expect(frame).toContain("Dear operator, the upstream is slow.");
    expect(frame).toContain("answer: completed · attempt 1 · rev 1");
    expect(frame).toContain("my request failed");
  });

  it("scrolls the sections under a pinned status line", async () => {
    const staff = fakeStaff();
    const { lastFrame, stdin } = open(staff, { rows: 5 });
    await until(() => lastFrame()!.includes("Request"), "the case");
    expect(lastFrame()!.split("\n")).toHaveLength(5);
    expect(lastFrame()!.split("\n")[0]).toMatch(/1-4\/\d+$/);
    const line = (n: number) => lastFrame()!.split("\n")[n]!;
    stdin.write(KEY.down);
    await until(() => line(1) === "id: req_1", "one line down");
    stdin.write(KEY.pageDown);
    await until(() => /5-8\/\d+$/.test(line(0)), "a page down");
    stdin.write(KEY.pageUp);
    await until(() => /2-5\/\d+$/.test(line(0)), "a page up");
    stdin.write(KEY.up);
    await until(() => line(1) === "Request", "back at the top");
  });

  it.each([
    ["t", "takeover"],
    ["u", "resume"],
    ["xy", "resolve"],
    ["R", "reopen"],
  ])("%s calls change(%s), refreshes and shows a notice", async (key, change) => {
    const staff = fakeStaff();
    const { lastFrame, stdin, seen } = open(staff);
    await until(() => lastFrame()!.includes("Transcript"));
    stdin.write(key);
    await until(() => seen.notices.length > 0, "the notice");
    expect(callsOf(staff, "change")).toEqual([[CASE_ID, change]]);
    expect(callsOf(staff, "getCase")).toHaveLength(2);
    expect(seen.errors).toEqual([]);
  });

  it("m writes the reply in the editor and sends it", async () => {
    const staff = fakeStaff();
    const edits: string[] = [];
    const editText = async (initial: string) => (edits.push(initial), "Fixed on our side.\n");
    const { lastFrame, stdin, seen } = open(staff, { editText });
    await until(() => lastFrame()!.includes("Transcript"));
    stdin.write("m");
    await until(() => seen.notices.length > 0);
    expect(edits).toEqual([""]);
    expect(callsOf(staff, "reply")).toEqual([[CASE_ID, "Fixed on our side.\n"]]);
    expect(seen.notices).toEqual(["reply sent"]);
  });

  it("m on a chat-platform case is refused without opening the editor", async () => {
    const staff = fakeStaff({ getCase: async () => detail({ source_ref: "chan-42" }) });
    let edited = false;
    const { lastFrame, stdin, seen } = open(staff, {
      editText: async () => {
        edited = true;
        return "x";
      },
    });
    await until(() => lastFrame()!.includes("chat chan-42"));
    stdin.write("m");
    await until(() => seen.errors.length > 0);
    expect(seen.errors[0]).toMatch(/chat platform \(chan-42\)/);
    expect(edited).toBe(false);
    expect(callsOf(staff, "reply")).toEqual([]);
  });

  it("o edits the latest operator draft and saves it as reviewed; b starts from empty", async () => {
    const staff = fakeStaff();
    const edits: string[] = [];
    const editText = async (initial: string) => (edits.push(initial), `${initial} Reviewed.`);
    const { lastFrame, stdin, seen } = open(staff, { editText });
    await until(() => lastFrame()!.includes("Transcript"));
    stdin.write("o");
    await until(() => seen.notices.length === 1);
    stdin.write("b");
    await until(() => seen.notices.length === 2);
    expect(edits).toEqual(["Dear operator, the upstream is slow.", ""]);
    expect(callsOf(staff, "draft")).toEqual([
      [CASE_ID, "operator", "Dear operator, the upstream is slow. Reviewed."],
      [CASE_ID, "bug", " Reviewed."],
    ]);
  });

  it("an empty editor text saves nothing", async () => {
    const staff = fakeStaff();
    const { lastFrame, stdin, seen } = open(staff, { editText: async () => null });
    await until(() => lastFrame()!.includes("Transcript"));
    stdin.write("o");
    await until(() => seen.notices.length > 0);
    expect(callsOf(staff, "draft")).toEqual([]);
    expect(seen.notices[0]).toMatch(/not saved/);
  });

  it("O and B ask a worker to generate the draft", async () => {
    const staff = fakeStaff();
    const { lastFrame, stdin, seen } = open(staff);
    await until(() => lastFrame()!.includes("Transcript"));
    stdin.write("O");
    await until(() => seen.notices.length === 1);
    stdin.write("B");
    await until(() => seen.notices.length === 2);
    expect(callsOf(staff, "draft")).toEqual([
      [CASE_ID, "operator"],
      [CASE_ID, "bug"],
    ]);
  });

  it("a failed action shows the one-line error and the screen stays", async () => {
    const staff = fakeStaff({
      change: async () => {
        throw new GatewayHttpError(409, "case_resolved", "the case is resolved", null, "req_9", null);
      },
    });
    const { lastFrame, stdin, seen } = open(staff);
    await until(() => lastFrame()!.includes("Transcript"));
    stdin.write("t");
    await until(() => seen.errors.length > 0);
    expect(seen.errors).toEqual(["the case is resolved"]);
    expect(lastFrame()).toContain("Transcript");
  });

  it("x asks first: any key but y resolves nothing", async () => {
    const staff = fakeStaff();
    const { lastFrame, stdin, seen } = open(staff);
    await until(() => lastFrame()!.includes("Transcript"));
    stdin.write("x");
    await until(() => seen.notices.length > 0, "the question");
    expect(seen.notices.at(-1)).toBe("resolve case 11111111? [y/N]");
    expect(seen.capturing.at(-1)).toBe(true);
    stdin.write("n");
    await until(() => seen.notices.at(-1) === "cancelled: nothing changed", "the cancel");
    expect(seen.capturing.at(-1)).toBe(false);
    expect(callsOf(staff, "change")).toEqual([]);
  });

  it("m reads the case again first: a case resolved meanwhile is refused before the editor opens", async () => {
    let reads = 0;
    const staff = fakeStaff({ getCase: async () => (reads++ === 0 ? detail() : detail({ status: "resolved" })) });
    let edited = false;
    const { lastFrame, stdin, seen } = open(staff, {
      editText: async () => {
        edited = true;
        return "typed for nothing";
      },
    });
    await until(() => lastFrame()!.includes("Transcript"));
    stdin.write("m");
    await until(() => seen.errors.length > 0, "the refusal");
    expect(seen.errors[0]).toBe("the case is resolved: R reopens it, then m replies");
    expect(edited).toBe(false);
    expect(callsOf(staff, "getCase")).toHaveLength(2);
    expect(callsOf(staff, "reply")).toEqual([]);
  });

  it("a reply the gateway refuses is kept: the next m opens it again and sends it", async () => {
    let replies = 0;
    const staff = fakeStaff({
      reply: async (_id, content) => {
        if (replies++ === 0) throw new GatewayHttpError(503, "unavailable", "try again", null, "req_7", null);
        return { case: detail().case, message: { role: "staff", content, author: "admin:u1", created_at: "2026-03-01T12:00:00Z" } };
      },
    });
    const edits: string[] = [];
    const editText = async (initial: string) => (edits.push(initial), initial === "" ? "A long careful reply." : `${initial} Edited.`);
    const { lastFrame, stdin, seen } = open(staff, { editText });
    await until(() => lastFrame()!.includes("Transcript"));
    stdin.write("m");
    await until(() => seen.errors.length > 0, "the failed send");
    expect(seen.errors[0]).toBe("503 unavailable: try again (request req_7) · your reply is kept: m edits it and sends it again");
    stdin.write("m");
    await until(() => seen.notices.includes("reply sent"), "the second send");
    expect(edits).toEqual(["", "A long careful reply."]);
    expect(callsOf(staff, "reply")).toEqual([
      [CASE_ID, "A long careful reply."],
      [CASE_ID, "A long careful reply. Edited."],
    ]);
  });

  it("esc goes back to the queue", async () => {
    const staff = fakeStaff();
    const { lastFrame, stdin, seen } = open(staff);
    await until(() => lastFrame()!.includes("Transcript"));
    stdin.write(KEY.escape);
    await until(() => seen.routes.length > 0, "the route");
    expect(seen.routes).toEqual([{ screen: "queue", focus: CASE_ID }]);
  });
});
