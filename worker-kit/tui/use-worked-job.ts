import { useState } from "react";
import type { WorkedJob } from "./job-view.js";
import {
  cardJson,
  MANUAL_FAIL_CODES,
  manualClaimRequest,
  manualCompleteRequest,
  manualFailRequest,
  nextDisposition,
  parseCardJson,
} from "./state/manual-job.js";
import type { ScreenProps } from "./screen.js";
import { useOneAction } from "./use-one-action.js";

// The job screen's job worked by hand and the moves on it (job-screen.tsx maps the keys to them): each move runs
// alone (useOneAction), a failure goes to the shell's error line and the job stays as it was.

export interface WorkedJobMoves {
  worked: WorkedJob | null;
  claim(): Promise<void>;
  editAnswer(w: WorkedJob): Promise<void>;
  editCard(w: WorkedJob): Promise<void>;
  nextDisposition(): void;
  complete(w: WorkedJob): Promise<void>;
  /** Retryable: given back to the queue; else failed for good. */
  fail(w: WorkedJob, retryable: boolean): Promise<void>;
}

export function useWorkedJob({ worker, staff, editText, showError, showNotice }: ScreenProps): WorkedJobMoves {
  const [worked, setWorked] = useState<WorkedJob | null>(null);
  // An invalid card's text, kept so that the next `k` edits it again instead of losing it.
  const [cardDraft, setCardDraft] = useState<string | null>(null);
  const run = useOneAction(showError);

  const claim = () =>
    run(async () => {
      const [job] = await worker!.claim(manualClaimRequest(staff.session.user.email));
      if (job === undefined) {
        showNotice("no job to claim now");
        return;
      }
      setWorked({ job, content: "", card: job.context.card, disposition: "answer", ended: null });
      setCardDraft(null);
      showNotice(null);
    });

  const editAnswer = (w: WorkedJob) =>
    run(async () => {
      const text = await editText(w.content, { suffix: ".md" });
      if (text !== null) setWorked((cur) => cur && { ...cur, content: text.trimEnd() });
    });

  const editCard = (w: WorkedJob) =>
    run(async () => {
      const text = await editText(cardDraft ?? cardJson(w.card), { suffix: ".json" });
      if (text === null) return;
      const parsed = parseCardJson(text);
      if (!parsed.ok) {
        setCardDraft(text);
        showError(new Error(`${parsed.problem} (k edits it again)`));
        return;
      }
      setCardDraft(null);
      setWorked((cur) => cur && { ...cur, card: parsed.card });
      showNotice(null);
    });

  const complete = (w: WorkedJob) =>
    run(async () => {
      const answer = await worker!.complete(w.job.id, manualCompleteRequest(w.job, w));
      setWorked({ ...w, ended: `completed: ${answer.outcome} (case revision ${answer.case_revision})` });
      showNotice(null);
    });

  const fail = (w: WorkedJob, retryable: boolean) =>
    run(async () => {
      const code = retryable ? MANUAL_FAIL_CODES.release : MANUAL_FAIL_CODES.fail;
      const answer = await worker!.fail(w.job.id, manualFailRequest(w.job.lease_token, code, retryable));
      const ended = answer.status === "queued" ? `given back: queued again from ${answer.available_at}` : `failed for good (${code})`;
      setWorked({ ...w, ended });
      showNotice(null);
    });

  return {
    worked,
    claim,
    editAnswer,
    editCard,
    nextDisposition: () => setWorked((cur) => cur && { ...cur, disposition: nextDisposition(cur.disposition) }),
    complete,
    fail,
  };
}
