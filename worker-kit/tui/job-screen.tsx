import { Text } from "ink";
import { useEffect, useState } from "react";
import { JobView } from "./job-view.js";
import { leaseCountdown } from "./state/lease-countdown.js";
import type { KeyHelp, ScreenProps } from "./screen.js";
import { shortId } from "./state/short-id.js";
import { useConfirm } from "./use-confirm.js";
import { useKeys } from "./use-keys.js";
import { useWorkedJob } from "./use-worked-job.js";

// A support engineer works one job by hand (docs/support.md, "Jobs"): claim it, write the answer and the card in
// $EDITOR, complete or fail it while the lease lasts. The lease is the gateway's, judged by its clock; the
// countdown here only says how long is left. Completing (the answer is published) and failing for good ask y/n first.

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
  const { worker, showError, showNotice, setHelp, setCapturing, now, active } = props;
  const { worked, claim, editAnswer, editCard, nextDisposition, complete, fail } = useWorkedJob(props);
  const confirm = useConfirm(showNotice, setCapturing);
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

  useKeys(
    (input) => {
      if (confirm.pending !== null) return confirm.answer(input);
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
      else if (input === "d") nextDisposition();
      else if (input === "s") {
        if (expired) showError(new Error("the lease is gone: this job can no longer be completed; c claims another"));
        else confirm.ask(`complete job ${shortId(worked.job.id)} as ${worked.disposition}?`, () => void complete(worked));
      } else if (input === "f") void fail(worked, true);
      else if (input === "F") confirm.ask(`fail job ${shortId(worked.job.id)} for good?`, () => void fail(worked, false));
    },
    { isActive: active },
  );

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
