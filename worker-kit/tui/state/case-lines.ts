import type { StaffCaseDetail } from "../../wire/staff.js";
import { formatAge } from "./age.js";
import { modelName, shortId } from "./short-id.js";
import { oneLine, truncate, wrap } from "./text.js";

// The case view as lines of the body's width: a pinned status line, then the sections the screen scrolls through.
// Values that may hold newlines (messages, drafts) are wrapped; one-line facts are truncated.

export type LineTone = "heading" | "dim" | "text";

export interface CaseLine {
  text: string;
  tone: LineTone;
}

type Detail = StaffCaseDetail;
const INDENT = "  ";

/** The case in one line: what it is, where it came from, and what state it is in. */
export function caseStatusLine(detail: Detail, width: number, now: number): string {
  const c = detail.case;
  const parts = [
    `case ${shortId(c.id)}`,
    c.status,
    c.staff_hold ? "staff hold" : "automatic",
    ...(c.handoff ? ["handoff"] : []),
    c.locale,
    c.source_ref === null ? "dashboard" : `chat ${c.source_ref}`,
    `rev ${c.revision}`,
    `opened ${formatAge(c.created_at, now)}`,
  ];
  return truncate(oneLine(parts.join(" · ")), width);
}

export function caseLines(detail: Detail, width: number, now: number): CaseLine[] {
  const lines: CaseLine[] = [];
  const heading = (title: string) => lines.push({ text: truncate(title, width), tone: "heading" });
  const dim = (text: string) => lines.push({ text: truncate(oneLine(text), width), tone: "dim" });
  const field = (label: string, value: string) => lines.push({ text: truncate(oneLine(`${label}: ${value}`), width), tone: "text" });
  const block = (text: string) => {
    for (const line of wrap(text, width - INDENT.length)) lines.push({ text: INDENT + line, tone: "text" });
  };
  const gap = () => lines.push({ text: "", tone: "text" });

  requestSection(detail, heading, field, dim);
  gap();
  cardSection(detail, heading, field, dim);
  gap();
  heading("Evidence");
  if (detail.evidence.length === 0) dim("none");
  for (const e of detail.evidence) field(`${e.kind} ${e.id}`, JSON.stringify(e.content) ?? "null");
  gap();
  const u = detail.usage;
  heading("Usage");
  field("calls", `${u.model_calls} model, ${u.tool_calls} tool`);
  field("tokens", `${u.input_tokens} in, ${u.output_tokens} out`);
  field("cost", u.cost_usd === null ? "unknown" : `$${u.cost_usd}`);
  if (detail.case.incident_summary !== null) {
    gap();
    heading("Incident summary");
    block(detail.case.incident_summary);
  }
  gap();
  heading("Drafts");
  if (detail.drafts.length === 0) dim("none");
  for (const d of detail.drafts) {
    dim(`${d.kind} · ${d.reviewed ? "reviewed" : "generated"} · ${d.author ?? "worker"} · ${formatAge(d.created_at, now)}`);
    block(d.content);
  }
  gap();
  heading("Jobs");
  if (detail.jobs.length === 0) dim("none");
  for (const j of detail.jobs) {
    const error = j.error_code === null ? "" : ` · ${j.error_code}`;
    field(j.kind, `${j.status} · attempt ${j.attempts} · rev ${j.revision}${error} · ${formatAge(j.created_at, now)}`);
  }
  gap();
  heading("Transcript");
  if (detail.history_truncated) dim("(older messages not shown)");
  if (detail.messages.length === 0) dim("no messages");
  for (const m of detail.messages) {
    const author = m.author === null ? "" : ` (${m.author})`;
    dim(`${m.role}${author} · ${formatAge(m.created_at, now)}`);
    block(m.content);
  }
  return lines;
}

type Add = (label: string, value: string) => void;

function requestSection(detail: Detail, heading: (t: string) => void, field: Add, dim: (t: string) => void) {
  heading("Request");
  const f = detail.case.facts;
  if (f === null) {
    dim(detail.case.request_id === null ? "no request cited" : `request ${detail.case.request_id} (no facts recorded)`);
    return;
  }
  field("id", f.request_id);
  field(
    "route",
    `${f.route} · ${modelName(f.model)}${f.client_protocol === "" ? "" : ` · ${f.client_protocol}`}${f.streamed ? " · streamed" : ""}`,
  );
  const error = [f.error_code, f.error_class].filter((v) => v !== null).join(" / ");
  field("status", `${f.status}${error === "" ? "" : ` · ${error}`}`);
  if (f.error_summary !== null) field("error", f.error_summary);
  field("tokens", `${f.input_tokens} in, ${f.output_tokens} out, ${f.cached_tokens} cached · quota ${f.quota_charged}`);
  field("cost", f.cost_usd === null ? "unknown" : `$${f.cost_usd}`);
  field("latency", `${f.latency_ms} ms · completed ${f.completed_at}`);
}

function cardSection(detail: Detail, heading: (t: string) => void, field: Add, dim: (t: string) => void) {
  heading("Card");
  const card = detail.case.card;
  if (card === null) {
    dim("no card yet");
    return;
  }
  field("problem", card.problem);
  field("confidence", card.confidence.toFixed(2));
  for (const fact of card.facts) field(`fact ${fact.field}`, String(fact.value));
  const list = (label: string, items: string[]) => items.forEach((item) => field(label, item));
  list("hypothesis", card.hypotheses);
  list("check", card.checks);
  list("missing", card.missing);
  field("next step", card.next_step);
}
