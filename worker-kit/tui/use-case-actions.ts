import { useRef } from "react";
import type { StaffCaseDetail } from "../wire/staff.js";
import { describeError } from "../client/errors.js";
import type { CaseChange, DraftKind } from "../client/staff-client.js";
import type { ScreenProps } from "./screen.js";
import { shortId } from "./state/short-id.js";
import { useConfirm, type Confirm } from "./use-confirm.js";
import { useOneAction } from "./use-one-action.js";

// The case screen's single-key actions (case-screen.tsx maps the keys): each runs alone, then the case is read
// again and a notice says what happened; a failure goes to the shell's error line. Resolving asks first. A reply
// is never lost to a refusal: the case is read again before $EDITOR opens (a resolved or chat-platform case is
// refused then, with nothing typed), and a reply the gateway refuses is kept for the next `m` to edit and send.

const CHANGES: Record<string, { change: CaseChange; done: string; ask?: string }> = {
  t: { change: "takeover", done: "taken over: no automatic answer is published until you resume" },
  u: { change: "resume", done: "resumed: automatic answers are back on" },
  x: { change: "resolve", done: "resolved: R reopens it", ask: "resolve" },
  R: { change: "reopen", done: "reopened: m replies" },
};

const DRAFTS: Record<string, DraftKind> = { o: "operator", b: "bug" };

export interface CaseActions {
  confirm: Confirm;
  refresh(): void;
  /** Handles an action key on the case as last shown; false when the key is not one. */
  key(input: string, current: StaffCaseDetail): boolean;
}

export function useCaseActions(
  props: ScreenProps & { caseId: string; keptReplies?: Map<string, string> },
  load: () => Promise<StaffCaseDetail>,
): CaseActions {
  const { caseId, staff, editText, showError, showNotice, setCapturing } = props;
  const run = useOneAction(showError);
  const confirm = useConfirm(showNotice, setCapturing);
  // Replies the gateway refused, by case, offered again by the next `m` (the shell's map outlives this screen).
  const local = useRef(new Map<string, string>());
  const kept = props.keptReplies ?? local.current;

  const act = (action: () => Promise<string>) =>
    void run(async () => {
      const notice = await action();
      await load();
      showNotice(notice);
    });

  const reply = async (): Promise<string> => {
    const current = await load();
    if (current.case.source_ref !== null) {
      throw new Error(`case from the chat platform (${current.case.source_ref}): reply in its channel, not from here`);
    }
    if (current.case.status !== "open") throw new Error("the case is resolved: R reopens it, then m replies");
    const text = await editText(kept.get(caseId) ?? "", { suffix: ".md" });
    if (text === null) return kept.has(caseId) ? "no reply sent: m opens the kept one again" : "no reply sent: the text was empty";
    try {
      await staff.reply(caseId, text);
    } catch (err) {
      kept.set(caseId, text);
      throw new Error(`${describeError(err)} · your reply is kept: m edits it and sends it again`, { cause: err });
    }
    kept.delete(caseId);
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

  const key = (input: string, current: StaffCaseDetail): boolean => {
    const change = CHANGES[input];
    if (change) {
      const apply = () => act(async () => (await staff.change(caseId, change.change), change.done));
      if (change.ask === undefined) apply();
      else confirm.ask(`${change.ask} case ${shortId(caseId)}?`, apply);
      return true;
    }
    if (input === "m") return (act(reply), true);
    const kind = DRAFTS[input.toLowerCase()];
    if (kind === undefined) return false;
    act(() => (input === input.toLowerCase() ? editDraft(current, kind) : generateDraft(kind)));
    return true;
  };
  return { confirm, refresh: () => act(async () => "refreshed"), key };
}
