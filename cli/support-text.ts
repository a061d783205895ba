import type { IncidentList } from "../src/support/incidents/incident-wire.js";
import type { StaffCaseDetail, StaffCasePage } from "../src/support/staff/staff-wire.js";
import type { ClaimedJob, CompleteResponse, FailResponse } from "../src/support/wire.js";
import { incidentLines } from "../worker-kit/tui/state/incident-text.js";

// The short human text of `gateway support`'s non-interactive commands (`--json` is the scripting interface).
// Pure: each function returns lines, so they are tested without a process.

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();
const hold = (held: boolean) => (held ? "held" : "-");

export function queueText(page: StaffCasePage): string[] {
  if (page.cases.length === 0) return ["no cases"];
  const lines = page.cases.map(
    (c) => `${c.id}  ${c.status.padEnd(8)}  ${hold(c.staff_hold).padEnd(4)}  ${c.locale.padEnd(5)}  ${c.created_at}  ${c.problem ?? "-"}`,
  );
  return page.next_cursor ? [...lines, `next page: --cursor ${page.next_cursor}`] : lines;
}

export function caseText(detail: StaffCaseDetail): string[] {
  const c = detail.case;
  const origin = c.source_ref === null ? `user ${c.owner_user_id}` : `chat platform ${c.source_ref}`;
  const lines = [
    `case ${c.id} (${origin}): ${c.status}, staff hold ${c.staff_hold ? "on" : "off"}, revision ${c.revision}, locale ${c.locale}`,
  ];
  if (c.card) lines.push(`problem: ${oneLine(c.card.problem)}`, `next step: ${oneLine(c.card.next_step)}`);
  lines.push(`messages${detail.history_truncated ? " (latest only)" : ""}:`);
  lines.push(...detail.messages.map((m) => `  ${m.created_at} ${m.role}: ${oneLine(m.content)}`));
  lines.push(`jobs: ${detail.jobs.map((j) => `${j.kind} ${j.status}`).join(", ") || "none"}`);
  lines.push(`drafts: ${detail.drafts.length}, evidence: ${detail.evidence.length}, cost: ${detail.usage.cost_usd ?? "unknown"} USD`);
  return lines;
}

export function incidentsText(list: IncidentList): string[] {
  if (list.incidents.length === 0) return ["no candidate or confirmed incidents"];
  return list.incidents.flatMap((incident, i) => [...(i > 0 ? [""] : []), `incident ${incident.id}`, ...incidentLines(incident)]);
}

export function claimText(jobs: ClaimedJob[]): string[] {
  if (jobs.length === 0) return ["no job to claim now"];
  return jobs.flatMap((job) => [
    `claimed ${job.kind} job ${job.id} of case ${job.case_id} (attempt ${job.attempt}), lease until ${job.lease_expires_at}`,
    `  --lease-token ${job.lease_token} --revision ${job.revision}`,
  ]);
}

export const completeText = (answer: CompleteResponse) => [
  `job ${answer.job_id}: ${answer.outcome} (case revision ${answer.case_revision})`,
];

export const failText = (answer: FailResponse) => [
  answer.status === "queued" ? `job ${answer.job_id}: queued again from ${answer.available_at}` : `job ${answer.job_id}: failed for good`,
];
