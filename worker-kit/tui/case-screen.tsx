import { Box, Text } from "ink";
import { useCallback, useEffect, useMemo, useState } from "react";
import type { StaffCaseDetail } from "../wire/staff.js";
import type { KeyHelp, QueueView, ScreenProps } from "./screen.js";
import { caseLines, caseStatusLine } from "./state/case-lines.js";
import { scrollBy, scrollPosition, visibleWindow } from "./state/scroll.js";
import { withRight } from "./state/text.js";
import { useCaseActions } from "./use-case-actions.js";
import { useKeys } from "./use-keys.js";

// One case: a pinned status line over the scrollable sections (request, card, evidence, usage, drafts, jobs,
// transcript), and the staff's single-key actions (use-case-actions.ts).

export interface CaseScreenProps extends ScreenProps {
  caseId: string;
  /** The queue as it was when the case was opened, for esc. */
  back?: QueueView;
  /** Replies the gateway refused, by case id, kept by the shell across screens for the next `m`. */
  keptReplies?: Map<string, string>;
}

const KEYS: KeyHelp[] = [
  { key: "↑/↓/PgUp/PgDn", label: "scroll" },
  { key: "t", label: "takeover" },
  { key: "u", label: "resume" },
  { key: "x", label: "resolve" },
  { key: "R", label: "reopen" },
  { key: "m", label: "reply" },
  { key: "o/b", label: "edit operator/bug draft" },
  { key: "O/B", label: "generate draft" },
  { key: "r", label: "refresh" },
  { key: "esc", label: "queue" },
];

export function CaseScreen(props: CaseScreenProps) {
  const { caseId, back, staff, go, showError, clearError, setHelp, columns, rows, now, active } = props;
  const [detail, setDetail] = useState<StaffCaseDetail | null>(null);
  const [offset, setOffset] = useState(0);

  useEffect(() => {
    setHelp(KEYS);
  }, [setHelp]);
  const load = useCallback(async () => {
    const read = await staff.getCase(caseId);
    setDetail(read);
    return read;
  }, [staff, caseId]);
  useEffect(() => {
    load().then(clearError, showError);
  }, [load, showError, clearError]);
  const actions = useCaseActions(props, load);

  const status = detail === null ? "" : caseStatusLine(detail, columns, now());
  const lines = useMemo(() => (detail === null ? [] : caseLines(detail, columns, now())), [detail, columns, now]);
  const height = Math.max(1, rows - 1);
  const page = Math.max(1, height - 1);

  useKeys(
    (input, key) => {
      if (actions.confirm.pending !== null) return actions.confirm.answer(input);
      if (key.escape) return go({ screen: "queue", focus: caseId, ...back });
      if (key.upArrow || input === "k") return setOffset((o) => scrollBy(o, -1, lines.length, height));
      if (key.downArrow || input === "j") return setOffset((o) => scrollBy(o, 1, lines.length, height));
      if (key.pageUp) return setOffset((o) => scrollBy(o, -page, lines.length, height));
      if (key.pageDown) return setOffset((o) => scrollBy(o, page, lines.length, height));
      if (input === "r") return actions.refresh();
      if (detail !== null) actions.key(input, detail);
    },
    { isActive: active },
  );

  if (detail === null) return <Text dimColor>loading case…</Text>;
  const position = scrollPosition(offset, lines.length, height);
  return (
    <Box flexDirection="column">
      <Text bold>{withRight(status, position, columns)}</Text>
      {visibleWindow(lines, offset, height).map((line, i) => (
        <Text key={i} bold={line.tone === "heading"} dimColor={line.tone === "dim"}>
          {line.text === "" ? " " : line.text}
        </Text>
      ))}
    </Box>
  );
}
