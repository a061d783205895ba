import { Text } from "ink";
import { useCallback, useEffect, useState } from "react";
import type { Incident, IncidentUpdate } from "../../src/support/incidents/incident-wire.js";
import { IncidentsView } from "./incidents-view.js";
import type { KeyHelp, ScreenProps } from "./screen.js";
import { useOneAction } from "./use-one-action.js";
import { useKeys } from "./use-keys.js";

// The incidents view (docs/support.md, "Incidents"): candidate and confirmed incidents with both aggregates, and
// the staff's moves on the selected one. The gateway judges every move (a publish without corroboration is its
// 409); the screen only shows the answer, or the error on the shell's one line.

const HELP: KeyHelp[] = [
  { key: "↑/↓", label: "select" },
  { key: "c", label: "confirm" },
  { key: "x", label: "resolve" },
  { key: "w", label: "write summary" },
  { key: "p", label: "publish" },
  { key: "u", label: "withdraw" },
  { key: "r", label: "refresh" },
];

export function IncidentsScreen(props: ScreenProps) {
  const { staff, editText, showError, showNotice, setHelp } = props;
  const [incidents, setIncidents] = useState<Incident[] | null>(null);
  const [selected, setSelected] = useState(0);

  const run = useOneAction(showError);

  const refresh = useCallback(
    () =>
      run(async () => {
        const { incidents: list } = await staff.listIncidents();
        setIncidents(list);
        setSelected((s) => Math.min(s, Math.max(0, list.length - 1)));
      }),
    [run, staff],
  );

  useEffect(() => {
    setHelp(HELP);
    void refresh();
  }, [setHelp, refresh]);

  const current = incidents?.[selected];

  const apply = async (incident: Incident, body: IncidentUpdate, done: string) => {
    const { incident: changed } = await staff.updateIncident(incident.id, body);
    // The list holds candidate and confirmed incidents only, as the gateway lists them.
    setIncidents((list) => (list ?? []).flatMap((i) => (i.id !== changed.id ? [i] : changed.status === "resolved" ? [] : [changed])));
    if (changed.status === "resolved") setSelected((s) => Math.max(0, s - 1));
    showNotice(`${done}: ${changed.title}`);
  };

  const update = (incident: Incident, body: IncidentUpdate, done: string) => run(() => apply(incident, body, done));

  const writeSummary = (incident: Incident) =>
    run(async () => {
      const text = await editText(incident.public_summary ?? "", { suffix: ".md" });
      if (text === null) showNotice("summary unchanged");
      else
        await apply(
          incident,
          { public_summary: text.trim() },
          incident.published_at === null ? "summary saved" : "published summary changed",
        );
    });

  useKeys((input, key) => {
    const count = incidents?.length ?? 0;
    if (key.upArrow) setSelected((s) => Math.max(0, s - 1));
    else if (key.downArrow) setSelected((s) => Math.min(Math.max(0, count - 1), s + 1));
    else if (input === "r") void refresh();
    else if (current === undefined) return;
    else if (input === "c") void update(current, { status: "confirmed" }, "confirmed");
    else if (input === "x") void update(current, { status: "resolved" }, "resolved");
    else if (input === "w") void writeSummary(current);
    else if (input === "p") void update(current, { publish: true }, "published");
    else if (input === "u") void update(current, { publish: false }, "withdrawn");
  });

  if (incidents === null) return <Text>Loading incidents…</Text>;
  if (incidents.length === 0) return <Text>No candidate or confirmed incidents.</Text>;

  return <IncidentsView incidents={incidents} selected={selected} columns={props.columns} rows={props.rows} />;
}
