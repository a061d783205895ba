import { Box, Text } from "ink";
import type { ReactNode } from "react";
import type { StaffCasePage } from "../wire/staff.js";
import { windowStart } from "./state/queue-filter.js";
import { queueHeader, queueRow, type CaseSummary } from "./state/queue-rows.js";

// What the queue shows: the column titles, the rows that fit around the cursor, the filter field when there is
// one, and a last line with the page, or the stale mark when the last refresh failed. Presentational only:
// queue-screen.tsx owns the page, the filter, the cursor and the keys.

export interface QueueTableProps {
  page: StaffCasePage;
  /** The page's cases that match the filter. */
  cases: CaseSummary[];
  selected: number;
  listRows: number;
  pageNumber: number;
  filtered: boolean;
  field: ReactNode;
  stale: string | null;
  columns: number;
  now: number;
}

export function QueueTable(props: QueueTableProps) {
  const { page, cases, selected, listRows, columns, now } = props;
  const top = windowStart(selected, listRows);
  const more = page.next_cursor === undefined ? "last page" : "n for more";
  const count = `${page.cases.length} ${page.cases.length === 1 ? "case" : "cases"}${props.filtered ? ` · ${cases.length} match` : ""}`;
  return (
    <Box flexDirection="column">
      <Text bold>{queueHeader(columns)}</Text>
      {cases.length === 0 ? <Text dimColor>{props.filtered ? "no case matches the filter" : "no cases"}</Text> : null}
      {cases.slice(top, top + listRows).map((c, i) => (
        <Text key={c.id} inverse={top + i === selected}>
          {queueRow(c, now, columns, top + i === selected)}
        </Text>
      ))}
      {props.field}
      {props.stale === null ? (
        <Text dimColor>{`page ${props.pageNumber} · ${count} · ${more}`.slice(0, columns)}</Text>
      ) : (
        <Text color="yellow">{props.stale.slice(0, columns)}</Text>
      )}
    </Box>
  );
}
