import { Box, Text } from "ink";
import { useCallback, useEffect, useState } from "react";
import type { Incident, IncidentUpdate } from "../wire/incidents.js";
import { IncidentsView } from "./incidents-view.js";
import type { KeyHelp, ScreenProps } from "./screen.js";
import { staleLine } from "./state/stale.js";
import { useConfirm } from "./use-confirm.js";
import { useOneAction } from "./use-one-action.js";
import { useKeys } from "./use-keys.js";
import { useRefresh } from "./use-refresh.js";

// The incidents view (docs/support.md, "Incidents"): candidate and confirmed incidents with both aggregates, read
// again every few seconds, and the staff's moves on the selected one. The moves that cannot be taken back
// (confirm, resolve, publish: the public sees a published summary at once) ask y/n first. The gateway judges every
// move (a publish without corroboration is its 409); the screen only shows the answer, or the error line.

const HELP: KeyHelp[] = [
  { key: "↑/↓", label: "select" },
  { key: "c", label: "confirm" },
  { key: "x", label: "resolve" },
  { key: "w", label: "write summary" },
  { key: "p", label: "publish" },
  { key: "u", label: "withdraw" },
  { key: "r", label: "refresh" },
];

const ASKED: Record<string, { body: IncidentUpdate; done: string; ask: string }> = {
  c: { body: { status: "confirmed" }, done: "confirmed", ask: "confirm" },
  x: { body: { status: "resolved" }, done: "resolved", ask: "resolve" },
  p: { body: { publish: true }, done: "published", ask: "publish" },
};

export function IncidentsScreen(props: ScreenProps) {
  const { staff, editText, showError, showNotice, setHelp, setCapturing, active } = props;
  const [incidents, setIncidents] = useState<Incident[] | null>(null);
  const [selectedId, setSelectedId] = useState<string | null>(null);
  const run = useOneAction(showError);
  const confirm = useConfirm(showNotice, setCapturing);

  const load = useCallback(async () => setIncidents((await staff.listIncidents()).incidents), [staff]);
  const { refresh, failure } = useRefresh(load, {
    every: props.refreshMs,
    paused: !active || confirm.pending !== null,
    clearError: props.clearError,
    now: props.now,
  });
  useEffect(() => {
    setHelp(HELP);
  }, [setHelp]);

  const list = incidents ?? [];
  const found = list.findIndex((i) => i.id === selectedId);
  const selected = found >= 0 ? found : 0;
  const current = list[selected];
  const select = (index: number) => setSelectedId(list[Math.max(0, Math.min(index, list.length - 1))]?.id ?? null);

  const apply = async (incident: Incident, body: IncidentUpdate, done: string) => {
    const { incident: changed } = await staff.updateIncident(incident.id, body);
    // The list holds candidate and confirmed incidents only, as the gateway lists them.
    setIncidents((all) => (all ?? []).flatMap((i) => (i.id !== changed.id ? [i] : changed.status === "resolved" ? [] : [changed])));
    if (changed.status === "resolved") setSelectedId(list[Math.max(0, selected - 1)]?.id ?? null);
    showNotice(`${done}: ${changed.title}`);
  };
  const update = (incident: Incident, body: IncidentUpdate, done: string) => void run(() => apply(incident, body, done));
  const writeSummary = (incident: Incident) =>
    void run(async () => {
      const text = await editText(incident.public_summary ?? "", { suffix: ".md" });
      if (text === null) showNotice("summary unchanged");
      else
        await apply(
          incident,
          { public_summary: text.trim() },
          incident.published_at === null ? "summary saved" : "published summary changed",
        );
    });

  useKeys(
    (input, key) => {
      if (confirm.pending !== null) return confirm.answer(input);
      if (key.upArrow) select(selected - 1);
      else if (key.downArrow) select(selected + 1);
      else if (input === "r") void refresh();
      else if (current === undefined) return;
      else if (ASKED[input]) {
        const { body, done, ask } = ASKED[input];
        confirm.ask(`${ask} incident "${current.title}"?`, () => update(current, body, done));
      } else if (input === "w") writeSummary(current);
      else if (input === "u") update(current, { publish: false }, "withdrawn");
    },
    { isActive: active },
  );

  const stale = failure === null ? null : <Text color="yellow">{staleLine(failure, props.baseUrl).slice(0, props.columns)}</Text>;
  if (incidents === null) return stale ?? <Text>Loading incidents…</Text>;
  const body =
    incidents.length === 0 ? (
      <Text>No candidate or confirmed incidents.</Text>
    ) : (
      <IncidentsView incidents={incidents} selected={selected} columns={props.columns} rows={props.rows - (stale ? 1 : 0)} />
    );
  if (stale === null) return body;
  return (
    <Box flexDirection="column">
      {stale}
      {body}
    </Box>
  );
}
