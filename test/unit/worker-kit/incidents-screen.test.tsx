import { render } from "ink-testing-library";
import { afterEach, describe, expect, it } from "vitest";
import { cleanup } from "ink-testing-library";
import type { Incident, IncidentUpdate } from "../../../worker-kit/wire/incidents.js";
import { GatewayHttpError } from "../../../worker-kit/client/errors.js";
import { IncidentsScreen } from "../../../worker-kit/tui/incidents-screen.js";
import { fakeScreenProps, KEYS, settle } from "./fake-screen-props.js";
import { incident, technical } from "./incident-fixtures.js";

afterEach(cleanup);

const second = incident({
  id: "22222222-2222-4222-8222-222222222222",
  status: "confirmed",
  title: "demo-large failing with timeout",
  public_model: "demo-large",
  error_code: "upstream_timeout",
  technical,
  technically_corroborated_at: "2025-03-01T12:05:00.000Z",
  public_summary: "Answers from demo-large time out.",
});

function staffWith(list: Incident[], onUpdate: (id: string, body: IncidentUpdate) => Incident) {
  return {
    listIncidents: async () => ({ incidents: list }),
    updateIncident: async (id: string, body: IncidentUpdate) => ({ incident: onUpdate(id, body) }),
  };
}

const updates = (calls: { method: string; args: unknown[] }[]) => calls.filter((c) => c.method === "updateIncident").map((c) => c.args);

describe("IncidentsScreen", () => {
  it("lists incidents with both aggregates of the selected one and moves the selection", async () => {
    const { props, recorded } = fakeScreenProps({ staff: staffWith([incident(), second], () => incident()) });
    const ui = render(<IncidentsScreen {...props} />);
    await settle();
    const frame = ui.lastFrame()!;
    expect(frame).toContain("Incidents (2)");
    expect(frame).toContain("> candidate  demo-small  upstream_error  4 cases");
    expect(frame).toContain("affected users: 3 users, 4 cases in 60 min");
    expect(frame).toContain("technical: not corroborated by the request log");
    expect(frame).toContain("summary: (none)");
    expect(frame).toContain("unpublished: needs confirmation, corroboration, a summary");
    expect(recorded.help.map((h) => h.key)).toEqual(["↑/↓", "c", "x", "w", "p", "u", "r"]);

    ui.stdin.write(KEYS.down);
    await settle();
    const next = ui.lastFrame()!;
    expect(next).toContain("> confirmed  demo-large  upstream_timeout");
    expect(next).toContain("technical: 12 errors of 40 requests (30.0%) in 15 min");
    expect(next).toContain("summary: Answers from demo-large time out.");
    expect(next).toContain("unpublished: ready to publish");
  });

  it("confirms, resolves (the row leaves the list) and publishes the selected incident", async () => {
    let current = incident();
    const { props, recorded } = fakeScreenProps({
      staff: staffWith([current, second], (id, body) => {
        if (id === second.id) return { ...second, status: body.status ?? second.status };
        current = { ...current, ...(body.status ? { status: body.status } : {}) };
        if (body.publish) current = { ...current, published_at: "2025-03-01T12:10:00.000Z" };
        return current;
      }),
    });
    const ui = render(<IncidentsScreen {...props} />);
    await settle();
    ui.stdin.write("c");
    await settle();
    // A move that cannot be taken back asks first; any key but y cancels it.
    expect(recorded.notices.at(-1)).toBe('confirm incident "demo-small failing with upstream_error"? [y/N]');
    ui.stdin.write("n");
    await settle();
    expect(updates(recorded.calls)).toEqual([]);
    ui.stdin.write("c");
    await settle();
    ui.stdin.write("y");
    await settle();
    expect(ui.lastFrame()).toContain("> confirmed  demo-small");
    ui.stdin.write("p");
    await settle();
    ui.stdin.write("y");
    await settle();
    expect(ui.lastFrame()).toContain("published since 2025-03-01T12:10:00.000Z");
    ui.stdin.write("u");
    await settle();
    ui.stdin.write(KEYS.down);
    await settle();
    ui.stdin.write("x");
    await settle();
    ui.stdin.write("y");
    await settle();
    expect(ui.lastFrame()).toContain("Incidents (1)");
    expect(ui.lastFrame()).not.toContain("demo-large");
    expect(updates(recorded.calls)).toEqual([
      [current.id, { status: "confirmed" }],
      [current.id, { publish: true }],
      [current.id, { publish: false }],
      [second.id, { status: "resolved" }],
    ]);
    expect(recorded.notices).toContain("resolved: demo-large failing with timeout");
    expect(recorded.errors).toEqual([]);
  });

  it("writes the summary in $EDITOR, prefilled with the current one; an empty edit changes nothing", async () => {
    const { props, recorded } = fakeScreenProps({
      staff: staffWith([second], (_id, body) => ({ ...second, public_summary: body.public_summary ?? null })),
      edits: ["  We are on it.\n", null],
    });
    const ui = render(<IncidentsScreen {...props} />);
    await settle();
    ui.stdin.write("w");
    await settle();
    expect(recorded.edits[0]).toEqual({ initial: "Answers from demo-large time out.", suffix: ".md" });
    expect(ui.lastFrame()).toContain("summary: We are on it.");
    ui.stdin.write("w");
    await settle();
    expect(updates(recorded.calls)).toEqual([[second.id, { public_summary: "We are on it." }]]);
    expect(recorded.notices).toContain("summary unchanged");
  });

  it("shows the gateway's 409 for a publish without corroboration as the error line and stays", async () => {
    const refusal = new GatewayHttpError(409, "conflict", "Publishing needs technical corroboration.", null, "req_1", null);
    const { props, recorded } = fakeScreenProps({
      staff: {
        listIncidents: async () => ({ incidents: [incident()] }),
        updateIncident: async () => {
          throw refusal;
        },
      },
    });
    const ui = render(<IncidentsScreen {...props} />);
    await settle();
    ui.stdin.write("py");
    await settle();
    expect(recorded.errors).toEqual(["409 conflict: Publishing needs technical corroboration. (request req_1)"]);
    expect(ui.lastFrame()).toContain("> candidate  demo-small");
  });

  it("refreshes with r and says when there is nothing", async () => {
    let lists = 0;
    const { props } = fakeScreenProps({ staff: { listIncidents: async () => ({ incidents: lists++ === 0 ? [incident()] : [] }) } });
    const ui = render(<IncidentsScreen {...props} />);
    await settle();
    expect(ui.lastFrame()).toContain("Incidents (1)");
    ui.stdin.write("r");
    await settle();
    expect(ui.lastFrame()).toBe("No candidate or confirmed incidents.");
  });

  it("reads itself again, keeps the selected incident by id, and marks the list stale while the gateway fails", async () => {
    let list: Incident[] = [incident(), second];
    let failing = false;
    const { props } = fakeScreenProps({
      refreshMs: 40,
      now: () => Date.parse("2025-03-01T12:30:00.000Z"),
      staff: {
        listIncidents: async () => {
          if (failing) throw new Error("fetch failed");
          return { incidents: list };
        },
      },
    });
    const ui = render(<IncidentsScreen {...props} />);
    await settle();
    ui.stdin.write(KEYS.down);
    await settle();
    expect(ui.lastFrame()).toContain("> confirmed  demo-large");
    const third = incident({ id: "33333333-3333-4333-8333-333333333333", title: "a new one", public_model: "demo-new" });
    list = [third, incident(), second];
    for (let i = 0; i < 50 && !ui.lastFrame()!.includes("Incidents (3)"); i++) await new Promise((r) => setTimeout(r, 20));
    expect(ui.lastFrame()).toContain("> confirmed  demo-large");
    failing = true;
    for (let i = 0; i < 50 && !ui.lastFrame()!.includes("stale since"); i++) await new Promise((r) => setTimeout(r, 20));
    expect(ui.lastFrame()).toContain("stale since 12:30:00 UTC · http://gateway.test: fetch failed");
    expect(ui.lastFrame()).toContain("Incidents (3)");
  });
});
