import type { Pool } from "../../db/pool.js";
import { inTransaction } from "../../db/transaction.js";
import { errors } from "../../errors.js";
import type { Incident, IncidentList, IncidentResult, IncidentScanResult, IncidentUpdate } from "@model-gateway/worker-kit/wire/incidents";
import {
  incidentRowsByIds,
  linkCases,
  listIncidentRows,
  lockIncident,
  raiseFromCases,
  raiseFromLog,
  writeIncident,
  type IncidentRow,
  type IncidentStatus,
} from "./incidents-sql.js";
import type { Queryable } from "../../db/pool.js";
import { resolveId } from "../resolve-id.js";
import { INCIDENT_STATUSES } from "@model-gateway/worker-kit/wire/support";

// Incidents (docs/support.md, "Incidents"): the support_incidents task raises candidates from two independent
// signals, staff confirm, resolve and publish. `actor` is `admin:<user id>` from the routes, `cli` from the CLI.

/**
 * The scans' thresholds. Cases: at least `caseMinUsers` distinct users with open cases on one public model and
 * server-side error code within `caseWindowMinutes`. Log: at least `logMinErrors` such failures within
 * `logWindowMinutes`, and at least `logMinErrorRate` of the model's requests there.
 */
export const INCIDENT_THRESHOLDS = {
  caseWindowMinutes: 60,
  caseMinUsers: 3,
  logWindowMinutes: 15,
  logMinErrors: 10,
  logMinErrorRate: 0.2,
};

export interface IncidentScan {
  /** Incidents raised or refreshed by the case clusters. */
  fromCases: number;
  /** Incidents raised or refreshed (and corroborated) by the request log. */
  fromLog: number;
  /** Cases newly linked to an incident. */
  linked: number;
  /** Ids of the incidents this pass raised (new candidates). */
  raised: string[];
  /** Ids of the incidents this pass refreshed and did not raise. */
  refreshed: string[];
}

/** One pass of the support_incidents task (and tests, and `gateway incidents scan`). Idempotent: a second pass refreshes the same rows. */
export async function scanIncidents(db: Queryable, logDb: Queryable = db, t = INCIDENT_THRESHOLDS): Promise<IncidentScan> {
  const fromCases = await raiseFromCases(db, t.caseWindowMinutes, t.caseMinUsers);
  const fromLog = await raiseFromLog(db, logDb, t.logWindowMinutes, t.logMinErrors, t.logMinErrorRate);
  const linked = await linkCases(db, t.caseWindowMinutes);
  const touched = [...fromCases, ...fromLog];
  const raised = new Set(touched.filter((i) => i.inserted).map((i) => i.id));
  const refreshed = new Set(touched.map((i) => i.id).filter((id) => !raised.has(id)));
  return { fromCases: fromCases.length, fromLog: fromLog.length, linked, raised: [...raised], refreshed: [...refreshed] };
}

/** Runs the scan now, as the 5-minute task does, and answers the incidents it raised and refreshed. */
export async function scanIncidentsNow(db: Queryable, logDb: Queryable = db): Promise<IncidentScanResult> {
  const scan = await scanIncidents(db, logDb);
  const rows = await incidentRowsByIds(db, [...scan.raised, ...scan.refreshed]);
  const pick = (ids: string[]) => rows.filter((row) => ids.includes(row.id)).map(toIncident);
  return { raised: pick(scan.raised), refreshed: pick(scan.refreshed), linked_cases: scan.linked };
}

const iso = (d: Date) => d.toISOString();

function toIncident(row: IncidentRow): Incident {
  return {
    id: row.id,
    status: row.status,
    title: row.title,
    public_model: row.public_model,
    error_code: row.error_code,
    public_summary: row.public_summary,
    published_at: row.published_at === null ? null : iso(row.published_at),
    affected_users: row.affected as Incident["affected_users"],
    technical: row.technical as Incident["technical"],
    technically_corroborated_at: row.corroborated_at === null ? null : iso(row.corroborated_at),
    linked_cases: row.linked_cases,
    updated_by: row.updated_by,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export async function listIncidents(db: Queryable): Promise<IncidentList> {
  return { incidents: (await listIncidentRows(db)).map(toIncident) };
}

const rank = (s: IncidentStatus) => INCIDENT_STATUSES.indexOf(s);

/** What publishing still lacks, in words for the 409; empty when it may publish. */
function missingForPublish(status: IncidentStatus, corroborated: boolean, summary: string | null): string[] {
  const missing: string[] = [];
  if (status === "candidate") missing.push("status confirmed or resolved (it is a candidate)");
  if (!corroborated) missing.push("technical corroboration from the request log");
  if (summary === null) missing.push("a public_summary");
  return missing;
}

/**
 * Moves an incident one step (candidate → confirmed → resolved; its own status changes nothing, any other is a
 * 409), sets its public summary, publishes or withdraws it: all or nothing, checked on the result of the update.
 * `id` is the incident's id or an unambiguous prefix of it.
 */
export function updateIncident(pool: Pool, id: string, body: IncidentUpdate, actor: string): Promise<IncidentResult> {
  return inTransaction(pool, async (client) => {
    const row = await lockIncident(client, await resolveId(client, "incident", id));
    if (!row) throw errors.notFound("No such incident.");
    const status = body.status ?? row.status;
    if (status !== row.status && rank(status) !== rank(row.status) + 1) {
      throw errors.conflict(`An incident goes candidate → confirmed → resolved: it cannot go from ${row.status} to ${status}.`);
    }
    const summary = body.public_summary ?? row.public_summary;
    const published = body.publish ?? row.published_at !== null;
    if (body.publish === true) {
      const missing = missingForPublish(status, row.corroborated_at !== null, summary);
      if (missing.length > 0) throw errors.conflict(`Publishing this incident needs ${missing.join(" and ")}.`);
    }
    return { incident: toIncident(await writeIncident(client, row.id, { status, publicSummary: summary, published, actor })) };
  });
}
