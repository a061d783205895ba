import { Box, Text } from "ink";
import { useCallback, useEffect, useMemo, useState } from "react";
import type { StaffCaseDetail } from "../../src/support/staff/staff-wire.js";
import type { CaseChange, DraftKind } from "../client/staff-client.js";
import type { KeyHelp, ScreenProps } from "./screen.js";
import { useOneAction } from "./use-one-action.js";
import { caseLines, caseStatusLine } from "./state/case-lines.js";
import { scrollBy, scrollPosition, visibleWindow } from "./state/scroll.js";
import { withRight } from "./state/text.js";
import { useKeys } from "./use-keys.js";

// One case: a pinned status line over the scrollable sections (request, card, evidence, usage, drafts, jobs,
// transcript), and the staff's single-key actions. Every action refreshes the case and ends in a notice or the
// one-line error.

export interface CaseScreenProps extends ScreenProps {
  caseId: string;
}

const KEYS: KeyHelp[] = [
  { key: "↑/↓/PgUp/PgDn", label: "scroll" },
  { key: "t", label: "takeover" },
  { key: "u", label: "resume" },
  { key: "x", label: "resolve" },
  { key: "m", label: "reply" },
  { key: "o/b", label: "edit operator/bug draft" },
  { key: "O/B", label: "generate draft" },
  { key: "r", label: "refresh" },
  { key: "esc", label: "queue" },
];

const CHANGES: Record<string, { change: CaseChange; done: string }> = {
  t: { change: "takeover", done: "taken over: no automatic answer is published until you resume" },
  u: { change: "resume", done: "resumed: automatic answers are back on" },
  x: { change: "resolve", done: "resolved" },
};

const DRAFTS: Record<string, DraftKind> = { o: "operator", b: "bug" };

export function CaseScreen(props: CaseScreenProps) {
  const { caseId, staff, editText, go, showError, showNotice, setHelp, columns, rows, now } = props;
  const [detail, setDetail] = useState<StaffCaseDetail | null>(null);
  const [offset, setOffset] = useState(0);

  useEffect(() => {
    setHelp(KEYS);
  }, [setHelp]);
  const load = useCallback(async () => setDetail(await staff.getCase(caseId)), [staff, caseId]);
  useEffect(() => {
    load().catch(showError);
  }, [load, showError]);

  const run = useOneAction(showError);
  /** An action, then the case read again and the action's notice. */
  const act = (action: () => Promise<string>) =>
    run(async () => {
      const notice = await action();
      await load();
      showNotice(notice);
    });

  const reply = async (current: StaffCaseDetail): Promise<string> => {
    if (current.case.source_ref !== null) {
      throw new Error(`case from the chat platform (${current.case.source_ref}): reply in its channel, not from here`);
    }
    const text = await editText("", { suffix: ".md" });
    if (text === null) return "no reply sent: the text was empty";
    await staff.reply(caseId, text);
    return "reply sent";
  };
  const editDraft = async (current: StaffCaseDetail, kind: DraftKind): Promise<string> => {
    const latest = current.drafts.find((d) => d.kind === kind);
    const text = await editText(latest?.content ?? "", { suffix: ".md" });
    if (text === null) return `${kind} draft not saved: the text was empty`;
    await staff.draft(caseId, kind, text);
    return `${kind} draft saved as reviewed`;
  };
  const generateDraft = async (kind: DraftKind): Promise<string> => {
    await staff.draft(caseId, kind);
    return `a worker was asked to write the ${kind} draft; r refreshes`;
  };

  const status = detail === null ? "" : caseStatusLine(detail, columns, now());
  const lines = useMemo(() => (detail === null ? [] : caseLines(detail, columns, now())), [detail, columns, now]);
  const height = Math.max(1, rows - 1);
  const page = Math.max(1, height - 1);

  useKeys((input, key) => {
    if (key.escape) return go({ screen: "queue" });
    if (key.upArrow || input === "k") return setOffset((o) => scrollBy(o, -1, lines.length, height));
    if (key.downArrow || input === "j") return setOffset((o) => scrollBy(o, 1, lines.length, height));
    if (key.pageUp) return setOffset((o) => scrollBy(o, -page, lines.length, height));
    if (key.pageDown) return setOffset((o) => scrollBy(o, page, lines.length, height));
    if (input === "r") return void act(async () => "refreshed");
    if (detail === null) return;
    const change = CHANGES[input];
    if (change) return void act(async () => (await staff.change(caseId, change.change), change.done));
    if (input === "m") return void act(() => reply(detail));
    const kind = DRAFTS[input.toLowerCase()];
    if (kind) return void act(() => (input === input.toLowerCase() ? editDraft(detail, kind) : generateDraft(kind)));
  });

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
