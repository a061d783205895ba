import { Box, Text } from "ink";
import type { Incident } from "../wire/incidents.js";
import { incidentLines, incidentRow } from "./state/incident-text.js";

// What the incidents screen shows: the rows that fit, the selected one marked, and its detail below. Presentational
// only: incidents-screen.tsx owns the list, the selection and the keys.

/** Lines the detail pane takes below the list (one blank line, then incidentLines). */
const DETAIL_ROWS = 7;

export function IncidentsView({
  incidents,
  selected,
  columns,
  rows,
}: {
  incidents: Incident[];
  selected: number;
  columns: number;
  rows: number;
}) {
  const current = incidents[selected];
  const listRows = Math.max(1, rows - DETAIL_ROWS - 1);
  const first = Math.min(Math.max(0, selected - listRows + 1), Math.max(0, incidents.length - listRows));
  const visible = incidents.slice(first, first + listRows);
  return (
    <Box flexDirection="column" width={columns}>
      <Text bold>Incidents ({incidents.length})</Text>
      {visible.map((incident, i) => {
        const isSelected = first + i === selected;
        return (
          <Text key={incident.id} inverse={isSelected} wrap="truncate-end">
            {isSelected ? "> " : "  "}
            {incidentRow(incident)}
          </Text>
        );
      })}
      {current && (
        <Box flexDirection="column" marginTop={1}>
          {incidentLines(current).map((line, i) => (
            <Text key={i} wrap="truncate-end" bold={i === 0}>
              {line}
            </Text>
          ))}
        </Box>
      )}
    </Box>
  );
}
