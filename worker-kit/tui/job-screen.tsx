import { Text } from "ink";
import { useEffect, useState } from "react";
import { JobView, type WorkedJob } from "./job-view.js";
import { leaseCountdown } from "./state/lease-countdown.js";
import {
  cardJson,
  MANUAL_FAIL_CODES,
  manualClaimRequest,
  manualCompleteRequest,
  manualFailRequest,
  nextDisposition,
  parseCardJson,
} from "./state/manual-job.js";
import type { KeyHelp, ScreenProps } from "./screen.js";
import { useOneAction } from "./use-one-action.js";
import { useKeys } from "./use-keys.js";

// A support engineer works one job by hand (docs/support.md, "Jobs"): claim it, write the answer and the card in
// $EDITOR, complete or fail it while the lease lasts. The lease is the gateway's, judged by its clock; the
// countdown here only says how long is left.

const HELP: KeyHelp[] = [
  { key: "c", label: "claim" },
  { key: "e", label: "answer" },
  { key: "k", label: "card" },
  { key: "d", label: "disposition" },
  { key: "s", label: "complete" },
  { key: "f", label: "give back" },
  { key: "F", label: "fail" },
];

const TICK_MS = 1000;

export function JobScreen(props: ScreenProps) {
  const { worker, staff, editText, showError, showNotice, setHelp, now } = props;
  const [worked, setWorked] = useState<WorkedJob | null>(null);
  // An invalid card's text, kept so that the next `k` edits it again instead of losing it.
  const [cardDraft, setCardDraft] = useState<string | null>(null);
  const [, setTick] = useState(0);

  useEffect(() => {
    setHelp(worker === null ? [] : HELP);
  }, [setHelp, worker]);

  const working = worked !== null && worked.ended === null;
  useEffect(() => {
    if (!working) return;
    const timer = setInterval(() => setTick((n) => n + 1), TICK_MS);
    return () => clearInterval(timer);
  }, [working]);

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

  useKeys((input) => {
    if (worker === null) return;
    const expired = worked !== null && leaseCountdown(worked.job.lease_expires_at, now()).state === "expired";
    if (input === "c") {
      if (working && !expired) showNotice("finish this job first: s completes it, f gives it back, F fails it");
      else void claim();
      return;
    }
    if (!working) return;
    if (input === "e") void editAnswer(worked);
    else if (input === "k") void editCard(worked);
    else if (input === "d") setWorked((cur) => cur && { ...cur, disposition: nextDisposition(cur.disposition) });
    else if (input === "s") {
      if (expired) showError(new Error("the lease is gone: this job can no longer be completed; c claims another"));
      else void complete(worked);
    } else if (input === "f") void fail(worked, true);
    else if (input === "F") void fail(worked, false);
  });

  if (worker === null) {
    return (
      <Text>
        Working a job by hand needs the gateway&apos;s bot token: set SUPPORT_BOT_TOKEN, or start with --demo to read it from the
        demo&apos;s data dir (gateway support --demo).
      </Text>
    );
  }
  if (worked === null) return <Text>No job claimed: c claims the oldest job waiting.</Text>;
  return <JobView worked={worked} nowMs={now()} columns={props.columns} rows={props.rows} />;
}
