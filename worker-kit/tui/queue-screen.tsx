import { Box, Text } from "ink";
import { useEffect, useState } from "react";
import type { StaffCasePage } from "../../src/support/staff/staff-wire.js";
import { LIST_LIMIT } from "../../src/support/wire.js";
import type { KeyHelp, ScreenProps } from "./screen.js";
import { currentCursor, firstPage, nextPage, pageNumber, previousPage } from "./state/page-stack.js";
import { queueHeader, queueRow } from "./state/queue-rows.js";
import { useKeys } from "./use-keys.js";

// The queue: the staff's case list, newest first, one page of as many cases as the body has rows for.

const KEYS: KeyHelp[] = [
  { key: "↑/↓", label: "move" },
  { key: "enter", label: "open" },
  { key: "n/p", label: "next/prev page" },
  { key: "r", label: "refresh" },
];

/** The column titles and the page line take two of the body's rows. */
const CHROME_ROWS = 2;

export function QueueScreen({ staff, go, showError, showNotice, setHelp, columns, rows, now }: ScreenProps) {
  const [stack, setStack] = useState(firstPage);
  const [page, setPage] = useState<StaffCasePage | null>(null);
  const [selected, setSelected] = useState(0);
  const [reloads, setReloads] = useState(0);
  const limit = Math.max(LIST_LIMIT.min, Math.min(LIST_LIMIT.max, rows - CHROME_ROWS));

  useEffect(() => {
    setHelp(KEYS);
  }, [setHelp]);
  useEffect(() => {
    let current = true;
    staff.listCases({ limit, cursor: currentCursor(stack) }).then(
      (answer) => {
        if (!current) return;
        setPage(answer);
        setSelected((s) => Math.max(0, Math.min(s, answer.cases.length - 1)));
      },
      (err: unknown) => current && showError(err),
    );
    return () => {
      current = false;
    };
  }, [staff, stack, limit, reloads, showError]);

  const cases = page?.cases ?? [];
  useKeys((input, key) => {
    if (key.upArrow || input === "k") setSelected((s) => Math.max(0, s - 1));
    else if (key.downArrow || input === "j") setSelected((s) => Math.min(cases.length - 1, s + 1));
    else if (key.return && cases[selected]) go({ screen: "case", caseId: cases[selected].id });
    else if (input === "n") {
      if (page?.next_cursor === undefined) showNotice("this is the last page");
      else turnTo(nextPage(stack, page.next_cursor));
    } else if (input === "p") {
      if (pageNumber(stack) === 1) showNotice("this is the first page");
      else turnTo(previousPage(stack));
    } else if (input === "r") {
      showNotice(null);
      setReloads((n) => n + 1);
    }
  });
  const turnTo = (next: typeof stack) => {
    showNotice(null);
    setSelected(0);
    setStack(next);
  };

  if (page === null) return <Text dimColor>loading cases…</Text>;
  const time = now();
  const more = page.next_cursor === undefined ? "last page" : "n for more";
  return (
    <Box flexDirection="column">
      <Text bold>{queueHeader(columns)}</Text>
      {cases.length === 0 ? <Text dimColor>no cases</Text> : null}
      {cases.slice(0, limit).map((c, i) => (
        <Text key={c.id} inverse={i === selected}>
          {queueRow(c, time, columns, i === selected)}
        </Text>
      ))}
      <Text dimColor>
        {`page ${pageNumber(stack)} · ${cases.length} ${cases.length === 1 ? "case" : "cases"} · ${more}`.slice(0, columns)}
      </Text>
    </Box>
  );
}
