import type { Incident } from "../../wire/incidents.js";

// An incident in a few short lines (docs/support.md, "Incidents"): the incidents screen and
// `gateway support incidents` say it the same way. Pure: no UI import, so the CLI twin may use it without Ink.

/** "12:04" of an ISO time in UTC: the lines must fit 80 columns, and the date is rarely in doubt. */
const clock = (iso: string) => iso.slice(11, 16);

export function incidentRow(incident: Incident): string {
  const published = incident.published_at === null ? "" : "  published";
  return `${incident.status.padEnd(9)}  ${incident.public_model}  ${incident.error_code}  ${incident.linked_cases} cases${published}`;
}

export function affectedLine(incident: Incident): string {
  const a = incident.affected_users;
  if (a === null) return "affected users: never above the threshold";
  return (
    `affected users: ${a.distinct_users} users, ${a.cases} cases in ${a.window_minutes} min ` +
    `(cases ${clock(a.first_case_at)}–${clock(a.last_case_at)}, seen ${clock(a.observed_at)} UTC)`
  );
}

export function technicalLine(incident: Incident): string {
  const t = incident.technical;
  if (t === null) return "technical: not corroborated by the request log";
  const rate = `${(t.error_rate * 100).toFixed(1)}%`;
  return `technical: ${t.errors} errors of ${t.requests} requests (${rate}) in ${t.window_minutes} min, seen ${clock(t.observed_at)} UTC`;
}

export function publishedLine(incident: Incident): string {
  if (incident.published_at !== null) return `published since ${incident.published_at}`;
  const missing = [
    incident.status === "candidate" ? "confirmation" : null,
    incident.technically_corroborated_at === null ? "corroboration" : null,
    incident.public_summary === null ? "a summary" : null,
  ].filter((m) => m !== null);
  return missing.length === 0 ? "unpublished: ready to publish" : `unpublished: needs ${missing.join(", ")}`;
}

/** Every line of one incident, for a detail pane or a human-readable listing. */
export function incidentLines(incident: Incident): string[] {
  return [
    `${incident.title} [${incident.status}]`,
    `model ${incident.public_model} · error ${incident.error_code} · ${incident.linked_cases} linked cases`,
    affectedLine(incident),
    technicalLine(incident),
    `summary: ${incident.public_summary?.replace(/\s+/g, " ") ?? "(none)"}`,
    publishedLine(incident),
  ];
}
