import { cleanup, render } from "ink-testing-library";
import { afterEach, describe, expect, it } from "vitest";
import type { StaffClient } from "../../../worker-kit/client/staff-client.js";
import { GatewayHttpError } from "../../../worker-kit/client/errors.js";
import { App, type Screens } from "../../../worker-kit/tui/app.js";
import { CaseScreen } from "../../../worker-kit/tui/case-screen.js";
import { IncidentsScreen } from "../../../worker-kit/tui/incidents-screen.js";
import { JobScreen } from "../../../worker-kit/tui/job-screen.js";
import { QueueScreen } from "../../../worker-kit/tui/queue-screen.js";
import { incident } from "./incident-fixtures.js";
import { detail, fakeStaff, KEY, NOW, summary, until } from "./tui-fakes.js";

// The shell with the real screens: the help overlay, a round trip through a case, and the error line that the
// next good refresh clears.

afterEach(cleanup);

const screens: Screens = { queue: QueueScreen, case: CaseScreen, incidents: IncidentsScreen, job: JobScreen };
const ids = ["aaaaaaaa", "bbbbbbbb", "cccccccc"].map((p) => `${p}-2222-4333-8444-555555555555`);

function start(staff: StaffClient, refreshMs = 3_600_000, editText: (initial: string) => Promise<string | null> = async () => null) {
  return render(
    <App
      baseUrl="http://gw.test"
      email="admin@example.com"
      password="pw"
      login={async () => staff}
      worker={null}
      editText={editText}
      screens={screens}
      now={() => NOW}
      refreshMs={refreshMs}
    />,
  );
}

const cases = ids.map((id, i) => summary({ id, question: `question ${i}` }));

describe("App with its screens", () => {
  it("? shows every key of the screen over it, and any key closes it with the screen as it was", async () => {
    const staff = fakeStaff({ listCases: async () => ({ cases }) });
    const ui = start(staff);
    await until(() => ui.lastFrame()!.includes("question 2"), "the queue");
    ui.stdin.write("j");
    await until(() => /^> bbbbbbbb/m.test(ui.lastFrame()!), "row 2 selected");
    ui.stdin.write("?");
    await until(() => ui.lastFrame()!.includes("any key closes this help"), "the help");
    const frame = ui.lastFrame()!;
    for (const line of [/^ {2}\/ +filter$/m, /^ {2}enter +open$/m, /^ {2}\? +help$/m, /^ {2}q +quit$/m]) expect(frame).toMatch(line);
    expect(frame).not.toContain("question 2");
    // The key that closes the help does nothing else: j does not move the cursor, q does not quit.
    ui.stdin.write("q");
    await until(() => ui.lastFrame()!.includes("question 2"), "the queue again");
    expect(ui.lastFrame()).toMatch(/^> bbbbbbbb/m);
  });

  it("esc from a case comes back to the same row", async () => {
    const staff = fakeStaff({ listCases: async () => ({ cases }), getCase: async (id) => detail({ id }) });
    const ui = start(staff);
    await until(() => ui.lastFrame()!.includes("question 2"), "the queue");
    ui.stdin.write("jj");
    await until(() => /^> cccccccc/m.test(ui.lastFrame()!), "row 3 selected");
    ui.stdin.write(KEY.enter);
    await until(() => ui.lastFrame()!.includes("Request"), "the case");
    expect(ui.lastFrame()!.split("\n")[0]).toContain("case cccccccc");
    ui.stdin.write(KEY.escape);
    await until(() => ui.lastFrame()!.includes("question 2"), "the queue again");
    expect(ui.lastFrame()).toMatch(/^> cccccccc/m);
  });

  it("an action's error line goes away with the next good refresh", async () => {
    const refusal = new GatewayHttpError(409, "conflict", "Publishing needs technical corroboration.", null, "req_1", null);
    const staff = fakeStaff({
      listCases: async () => ({ cases }),
      listIncidents: async () => ({ incidents: [incident()] }),
      updateIncident: async () => {
        throw refusal;
      },
    });
    const ui = start(staff, 60);
    await until(() => ui.lastFrame()!.includes("question 2"), "the queue");
    ui.stdin.write("2");
    await until(() => ui.lastFrame()!.includes("Incidents (1)"), "the incidents");
    ui.stdin.write("p");
    await until(() => ui.lastFrame()!.includes("[y/N]"), "the question");
    ui.stdin.write("y");
    await until(() => ui.lastFrame()!.includes("409 conflict"), "the error line");
    await until(() => !ui.lastFrame()!.includes("409 conflict"), "the error cleared by a refresh");
    expect(ui.lastFrame()).toContain("Incidents (1)");
  });

  it("a refused reply outlives the case screen: back in the case, m opens it again", async () => {
    let replies = 0;
    const staff = fakeStaff({
      listCases: async () => ({ cases }),
      getCase: async (id) => detail({ id }),
      reply: async () => {
        replies += 1;
        throw new GatewayHttpError(503, "unavailable", "try again", null, null, null);
      },
    });
    const edits: string[] = [];
    const ui = start(staff, 3_600_000, async (initial) => (edits.push(initial), initial || "My careful reply."));
    await until(() => ui.lastFrame()!.includes("question 2"), "the queue");
    ui.stdin.write(KEY.enter);
    await until(() => ui.lastFrame()!.includes("Request"), "the case");
    ui.stdin.write("m");
    await until(() => ui.lastFrame()!.includes("your reply is kept"), "the failed send");
    ui.stdin.write(KEY.escape);
    await until(() => ui.lastFrame()!.includes("question 2"), "the queue again");
    ui.stdin.write(KEY.enter);
    await until(() => ui.lastFrame()!.includes("Request"), "the case again");
    ui.stdin.write("m");
    await until(() => replies === 2, "the second send");
    expect(edits).toEqual(["", "My careful reply."]);
  });
});
