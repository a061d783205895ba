import { Box, Text } from "ink";
import { MAX_ATTEMPTS, type Card, type ClaimedJob, type RequestFacts } from "../wire/support.js";
import { leaseCountdown } from "./state/lease-countdown.js";
import { modelName } from "./state/short-id.js";
import type { Disposition } from "./state/manual-job.js";

// What the job screen shows of a job worked by hand: its facts, the lease countdown, the answer being written and
// the transcript it answers. Presentational only: job-screen.tsx owns the state and the keys.

export interface WorkedJob {
  job: ClaimedJob;
  content: string;
  card: Card | null;
  disposition: Disposition;
  /** What became of it (completed or failed); null while the lease is being worked. */
  ended: string | null;
}

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();

function factsLines(facts: RequestFacts | null): string[] {
  if (facts === null) return ["request: no request facts", "error: -"];
  const error = facts.error_code === null ? "" : ` ${facts.error_code}`;
  return [
    `request ${facts.request_id}: ${facts.route} ${modelName(facts.model)} → ${facts.status}${error}`,
    `error: ${facts.error_summary === null ? "-" : oneLine(facts.error_summary)}`,
  ];
}

function LeaseLine({ expiresAt, nowMs }: { expiresAt: string; nowMs: number }) {
  const lease = leaseCountdown(expiresAt, nowMs);
  const color = lease.state === "expired" ? "red" : lease.state === "ending" ? "yellow" : "green";
  return <Text color={color}>{lease.text}</Text>;
}

/** Fixed lines above the transcript: header, two of facts, lease, state, answer heading and preview, transcript heading. */
const FIXED_ROWS = 10;
const ANSWER_PREVIEW_ROWS = 2;

export function JobView({ worked, nowMs, columns, rows }: { worked: WorkedJob; nowMs: number; columns: number; rows: number }) {
  const { job, content, card, disposition, ended } = worked;
  const answer = content === "" ? ["(empty: e writes it)"] : content.split("\n").slice(0, ANSWER_PREVIEW_ROWS);
  const transcriptRows = Math.max(1, rows - FIXED_ROWS);
  const transcript = job.context.transcript.slice(-transcriptRows);
  return (
    <Box flexDirection="column" width={columns}>
      <Text bold wrap="truncate-end">
        {`${job.kind} · case ${job.case_id} · rev ${job.revision} · attempt ${job.attempt}/${MAX_ATTEMPTS} · ${job.context.locale}`}
      </Text>
      {factsLines(job.context.facts).map((line, i) => (
        <Text key={i} wrap="truncate-end">
          {line}
        </Text>
      ))}
      {ended === null ? <LeaseLine expiresAt={job.lease_expires_at} nowMs={nowMs} /> : <Text bold>{ended}</Text>}
      <Text wrap="truncate-end">{`disposition: ${disposition} · card: ${card === null ? "none" : oneLine(card.problem) || "(no problem stated)"}`}</Text>
      <Text bold>Answer:</Text>
      {answer.map((line, i) => (
        <Text key={i} wrap="truncate-end">
          {line}
        </Text>
      ))}
      <Text bold>
        Transcript ({transcript.length} of {job.context.transcript.length}
        {job.context.history_truncated ? ", older ones left out" : ""}):
      </Text>
      {transcript.map((m, i) => (
        <Text key={i} wrap="truncate-end">
          {`${m.role}: ${oneLine(m.content)}`}
        </Text>
      ))}
    </Box>
  );
}
