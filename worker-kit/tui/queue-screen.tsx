import { Text } from "ink";
import { useEffect, useState } from "react";
import type { KeyHelp, ScreenProps } from "./screen.js";
import { firstPage, nextPage, pageNumber, previousPage, type PageStack } from "./state/page-stack.js";
import { matchesFilter, selectedIndex } from "./state/queue-filter.js";
import { QueueTable } from "./queue-table.js";
import { staleLine } from "./state/stale.js";
import { TextField } from "./text-field.js";
import { useKeys } from "./use-keys.js";
import { useQueuePage } from "./use-queue-page.js";

// The queue: the staff's case list, newest first, read again every few seconds. The cursor follows a case, not a
// row number, so a refresh or a round trip through the case (the route brings back the page, the filter and the
// case) leaves it where it was.

export interface QueueScreenProps extends ScreenProps {
  /** The case to put the cursor on. */
  focus?: string;
  stack?: PageStack;
  filter?: string;
}

const KEYS: KeyHelp[] = [
  { key: "↑/↓", label: "move" },
  { key: "enter", label: "open" },
  { key: "/", label: "filter" },
  { key: "esc", label: "clear filter" },
  { key: "n/p", label: "next/prev page" },
  { key: "r", label: "refresh" },
];

/** The column titles and the page line take two of the body's rows; the filter field one more. */
const CHROME_ROWS = 2;

export function QueueScreen(props: QueueScreenProps) {
  const { go, showNotice, setHelp, setCapturing, columns, rows, now, active, baseUrl } = props;
  const [stack, setStack] = useState(props.stack ?? firstPage);
  const [filter, setFilter] = useState(props.filter ?? "");
  const [editing, setEditing] = useState(false);
  const [selectedId, setSelectedId] = useState<string | null>(props.focus ?? null);
  const [fallback, setFallback] = useState(0);
  const listRows = Math.max(1, rows - CHROME_ROWS - (editing || filter !== "" ? 1 : 0));
  const { page, failure, refresh } = useQueuePage(props, stack, listRows, filter !== "", editing || !active);

  useEffect(() => {
    setHelp(KEYS);
  }, [setHelp]);

  const cases = (page?.cases ?? []).filter((c) => matchesFilter(c, filter));
  const selected = selectedIndex(cases, selectedId, fallback);
  const select = (index: number) => {
    const target = cases[Math.max(0, Math.min(index, cases.length - 1))];
    setFallback(Math.max(0, index));
    if (target) setSelectedId(target.id);
  };
  const turnTo = (next: PageStack) => {
    showNotice(null);
    setSelectedId(null);
    setFallback(0);
    setStack(next);
  };
  const editFilter = (on: boolean) => {
    setEditing(on);
    setCapturing(on);
  };

  useKeys(
    (input, key) => {
      if (editing) {
        if (key.escape) setFilter("");
        if (key.escape || key.return) editFilter(false);
        return;
      }
      if (key.upArrow || input === "k") select(selected - 1);
      else if (key.downArrow || input === "j") select(selected + 1);
      else if (key.return && cases[selected]) go({ screen: "case", caseId: cases[selected].id, back: { stack, filter } });
      else if (input === "/") editFilter(true);
      else if (key.escape) setFilter("");
      else if (input === "n") {
        if (page?.next_cursor === undefined) showNotice("this is the last page");
        else turnTo(nextPage(stack, page.next_cursor));
      } else if (input === "p") {
        if (pageNumber(stack) === 1) showNotice("this is the first page");
        else turnTo(previousPage(stack));
      } else if (input === "r") {
        showNotice(null);
        void refresh();
      }
    },
    { isActive: active },
  );

  const field =
    editing || filter !== "" ? (
      <TextField label="filter" value={filter} onChange={setFilter} onSubmit={() => editFilter(false)} focused={editing} width={columns} />
    ) : null;
  const stale = failure === null ? null : staleLine(failure, baseUrl);
  if (page === null) return <Text color={stale ? "yellow" : undefined}>{stale ?? "loading cases…"}</Text>;
  return (
    <QueueTable
      page={page}
      cases={cases}
      selected={selected}
      listRows={listRows}
      pageNumber={pageNumber(stack)}
      filtered={filter !== ""}
      field={field}
      stale={stale}
      columns={columns}
      now={now()}
    />
  );
}
