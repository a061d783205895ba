import type { Incident, IncidentList, IncidentScanResult } from "@model-gateway/worker-kit/wire/incidents";
import type { StaffCaseDetail, StaffCasePage, StaffCaseResult } from "@model-gateway/worker-kit/wire/staff";
import { formatTable, shortId, shortTime, type Column } from "./table.js";

// What the staff commands print for people, the same for both families (`gateway cases` / `gateway incidents` on
// the database, `gateway support cases` / `gateway support incidents` over HTTP): one function per answer. Pure:
// each returns lines, so they are tested without a process.

type CaseSummary = StaffCasePage["cases"][number];
type Job = StaffCaseDetail["jobs"][number];
type Message = StaffCaseDetail["messages"][number];

// A user's case by its owner's email when the list has it (the id under --wide, for the commands that take it).
const origin = (c: Pick<CaseSummary, "owner_user_id" | "owner_email" | "source_ref">, wide: boolean) => {
  if (c.source_ref !== null) return `chat:${c.source_ref}`;
  return !wide && c.owner_email ? c.owner_email : `user:${shortId(c.owner_user_id, wide) ?? "-"}`;
};

const CASE_COLUMNS: Column<CaseSummary>[] = [
  { header: "ID", cell: (c, wide) => shortId(c.id, wide) },
  { header: "STATUS", cell: (c) => c.status },
  { header: "HOLD", cell: (c) => (c.staff_hold ? "held" : "-") },
  { header: "HANDOFF", cell: (c) => (c.handoff ? "yes" : "-"), wideOnly: true },
  { header: "REV", cell: (c) => c.revision },
  { header: "ORIGIN", cell: origin, flex: true },
  { header: "REQUEST", cell: (c) => c.request_id, wideOnly: true },
  { header: "LOCALE", cell: (c) => c.locale, wideOnly: true },
  { header: "MODEL", cell: (c) => c.model, flex: true },
  { header: "PROBLEM", cell: (c) => c.problem, flex: true },
  { header: "QUESTION", cell: (c) => c.question, flex: true },
  { header: "CREATED", cell: (c, wide) => shortTime(c.created_at, wide), wideOnly: true },
  { header: "UPDATED", cell: (c, wide) => shortTime(c.updated_at, wide) },
];

/** `cases list`: a page of cases, then the next page's cursor. */
export function caseListLines(page: StaffCasePage, wide = false): string[] {
  const lines = formatTable(page.cases, CASE_COLUMNS, { wide });
  return page.next_cursor ? [...lines, `next page: --cursor ${page.next_cursor}`] : lines;
}

/**
 * The error worth showing for a job: a failed job's, or a queued one's after a failure (why it is waiting). A
 * completed or running job may carry an earlier attempt's error; it is history, not the job's state.
 */
export const jobError = (job: Pick<Job, "status" | "error_code">) =>
  job.status === "failed" || job.status === "queued" ? job.error_code : null;

const MESSAGE_COLUMNS: Column<Message>[] = [
  { header: "TIME", cell: (m, wide) => shortTime(m.created_at, wide) },
  { header: "ROLE", cell: (m) => m.role },
  { header: "AUTHOR", cell: (m) => m.author, flex: true },
  { header: "CONTENT", cell: (m) => m.content, flex: true },
];

const JOB_COLUMNS: Column<Job>[] = [
  { header: "ID", cell: (j, wide) => shortId(j.id, wide) },
  { header: "KIND", cell: (j) => j.kind },
  { header: "STATUS", cell: (j) => j.status },
  { header: "REV", cell: (j) => j.revision },
  { header: "ATTEMPTS", cell: (j) => j.attempts },
  { header: "ERROR", cell: jobError, flex: true },
  { header: "CREATED", cell: (j, wide) => shortTime(j.created_at, wide) },
  { header: "FINISHED", cell: (j, wide) => shortTime(j.finished_at, wide) },
];

const oneLine = (text: string) => text.replace(/\s+/g, " ").trim();

/** `cases show`: the case's line, its card, the transcript and the jobs. */
export function caseDetailLines(detail: StaffCaseDetail, wide = false): string[] {
  const c = detail.case;
  const from = c.source_ref === null ? `user ${c.owner_user_id}` : `chat platform ${c.source_ref}`;
  const lines = [
    `case ${c.id} (${from}): ${c.status}, staff hold ${c.staff_hold ? "on" : "off"}, revision ${c.revision}, locale ${c.locale}`,
  ];
  if (c.card) lines.push(`problem: ${oneLine(c.card.problem)}`, `next step: ${oneLine(c.card.next_step)}`);
  lines.push(
    "",
    `messages${detail.history_truncated ? " (latest only)" : ""}:`,
    ...formatTable(detail.messages, MESSAGE_COLUMNS, { wide }),
  );
  lines.push("", "jobs:", ...formatTable(detail.jobs, JOB_COLUMNS, { wide }));
  lines.push(
    "",
    `drafts: ${detail.drafts.length} (see --json), evidence: ${detail.evidence.length}, cost: ${detail.usage.cost_usd ?? "unknown"} USD`,
  );
  return lines;
}

/** A case change's one line: what was done, and the case after it. */
export const caseChangeLine = (result: StaffCaseResult, done: string) => {
  const c = result.case;
  return `${done} case ${c.id}: ${c.status}, staff hold ${c.staff_hold ? "on" : "off"}, revision ${c.revision}`;
};

const affected = (i: Incident) => (i.affected_users === null ? null : `${i.affected_users.distinct_users}`);
const failures = (i: Incident) =>
  i.technical === null ? null : `${i.technical.errors}/${i.technical.requests} (${Math.round(i.technical.error_rate * 100)}%)`;

const INCIDENT_COLUMNS: Column<Incident>[] = [
  { header: "ID", cell: (i, wide) => shortId(i.id, wide) },
  { header: "STATUS", cell: (i) => i.status },
  { header: "TITLE", cell: (i) => i.title, flex: true },
  { header: "MODEL", cell: (i) => i.public_model, wideOnly: true },
  { header: "ERROR_CODE", cell: (i) => i.error_code, wideOnly: true },
  { header: "USERS", cell: affected },
  { header: "FAILURES", cell: failures },
  { header: "CASES", cell: (i) => i.linked_cases },
  // FAILURES is there exactly when the request log corroborated the incident; the time is for --wide.
  { header: "CORROBORATED", cell: (i, wide) => shortTime(i.technically_corroborated_at, wide), wideOnly: true },
  { header: "PUBLISHED", cell: (i, wide) => (wide ? i.published_at : i.published_at === null ? null : "yes") },
  { header: "SUMMARY", cell: (i) => i.public_summary, wideOnly: true },
  { header: "UPDATED_BY", cell: (i) => i.updated_by, wideOnly: true },
  { header: "UPDATED", cell: (i, wide) => shortTime(i.updated_at, wide) },
];

/** `incidents list`: candidate and confirmed incidents, one a line. */
export const incidentListLines = (list: IncidentList, wide = false) => formatTable(list.incidents, INCIDENT_COLUMNS, { wide });

/** An incident change's one line. */
export const incidentLine = (i: Incident) =>
  `incident ${i.id} (${i.title}) is ${i.status}, ${i.published_at === null ? "not published" : `published since ${i.published_at}`}`;

/** `incidents scan`: what the pass did, then the incidents it raised and refreshed. */
export function scanLines(scan: IncidentScanResult, wide = false): string[] {
  const head = `scan: ${scan.raised.length} raised, ${scan.refreshed.length} refreshed, ${scan.linked_cases} case(s) linked`;
  const touched = [...scan.raised.map((i) => ({ ...i, change: "raised" })), ...scan.refreshed.map((i) => ({ ...i, change: "refreshed" }))];
  if (touched.length === 0) return [head];
  const columns: Column<Incident & { change: string }>[] = [{ header: "CHANGE", cell: (i) => i.change }, ...INCIDENT_COLUMNS];
  return [head, ...formatTable(touched, columns, { wide })];
}
