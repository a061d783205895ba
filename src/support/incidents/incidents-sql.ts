import type { Queryable } from "../../db/pool.js";
import type { INCIDENT_STATUSES } from "@model-gateway/worker-kit/wire/support";

// The incidents' statements (docs/support.md, "Incidents"). The scans are upserts on the one-unresolved-incident-
// per-signature index, so running them twice, or on two processes at once, updates the same row. Each signal
// writes only its own aggregate: the two stay independent.

/** An ISO-8601 UTC text of a timestamptz, as the wire's `z.iso.datetime()` reads it. */
const iso = (expr: string) => `to_char(${expr} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;

// Open cases in the window whose request failed on the server side, by public model and error code, with at least
// $2 distinct owners. Client errors (4xx) are each caller's own, not an incident.
const RAISE_FROM_CASES = `
with clusters as (
  select facts->>'model' as model, facts->>'error_code' as code, count(distinct owner_user_id)::int as users,
    count(*)::int as cases, min(created_at) as first_at, max(created_at) as last_at
  from support_cases
  where status = 'open' and created_at >= now() - make_interval(mins => $1) and facts->>'error_code' is not null
    and (facts->>'status')::int >= 500
  group by 1, 2
  having count(distinct owner_user_id) >= $2
)
insert into support_incidents (public_model, error_code, title, affected)
select model, code, model || ': ' || code,
  jsonb_build_object('distinct_users', users, 'cases', cases, 'first_case_at', ${iso("first_at")},
    'last_case_at', ${iso("last_at")}, 'window_minutes', $1::int, 'observed_at', ${iso("now()")})
from clusters
on conflict (public_model, error_code) where status <> 'resolved'
do update set affected = excluded.affected, updated_at = now()
returning id, (xmax = 0) as inserted`;

// Server-side failures (status >= 500, the partial index request_logs_server_errors_idx) by public model and
// error code in the window, against all the model's requests there: at least $2 of them and a rate of $3. The
// window is closed at now (and the writers' clock skew) so that only its day partitions are read, not the days
// made ahead.
const LOG_FAILURES = `
with failures as (
  select public_model, error_code, count(*)::int as errors
  from request_logs
  where created_at >= now() - make_interval(mins => $1) and created_at < now() + interval '5 minutes' and status >= 500
    and error_code is not null
  group by 1, 2
),
totals as (
  select public_model, count(*)::int as requests
  from request_logs
  where created_at >= now() - make_interval(mins => $1) and created_at < now() + interval '5 minutes'
    and public_model in (select public_model from failures)
  group by 1
),
raised as (
  select f.public_model, f.error_code, f.errors, t.requests, round(f.errors::numeric / t.requests, 4)::float8 as rate
  from failures f join totals t using (public_model)
  where f.errors >= $2 and f.errors::numeric / t.requests >= $3
)
select public_model, error_code, errors, requests, rate from raised`;

// The log's signatures (LOG_FAILURES, read on the request log's database, which may be apart: analytics.database_url)
// raised on the main database: $1 is their JSON array, $2 the window.
const RAISE_FROM_LOG = `
insert into support_incidents (public_model, error_code, title, technical, corroborated_at)
select public_model, error_code, public_model || ': ' || error_code,
  jsonb_build_object('requests', requests, 'errors', errors, 'error_rate', rate, 'window_minutes', $2::int,
    'observed_at', ${iso("now()")}),
  now()
from json_to_recordset($1::json) as raised(public_model text, error_code text, errors int, requests int, rate float8)
on conflict (public_model, error_code) where status <> 'resolved'
do update set technical = excluded.technical,
  corroborated_at = coalesce(support_incidents.corroborated_at, excluded.corroborated_at), updated_at = now()
returning id, (xmax = 0) as inserted`;

// Unlinked cases carrying an unresolved incident's signature: open ones, and recent resolved ones (a user who
// resolved their case while the incident went on still reads its summary).
const LINK_CASES = `
update support_cases c set incident_id = i.id
from support_incidents i
where i.status <> 'resolved' and c.incident_id is null and c.facts->>'model' = i.public_model
  and c.facts->>'error_code' = i.error_code and (c.status = 'open' or c.created_at >= now() - make_interval(mins => $1))`;

/** An incident a scan wrote: `inserted` when the upsert raised it (xmax 0: no earlier version of the row). */
export interface ScannedIncident {
  id: string;
  inserted: boolean;
}

export async function raiseFromCases(db: Queryable, windowMinutes: number, minUsers: number): Promise<ScannedIncident[]> {
  const { rows } = await db.query<ScannedIncident>({
    name: "support_incidents_from_cases",
    text: RAISE_FROM_CASES,
    values: [windowMinutes, minUsers],
  });
  return rows;
}

/** Raises (on `db`) the incidents of the failures the request log (on `logDb`) shows. */
export async function raiseFromLog(
  db: Queryable,
  logDb: Queryable,
  windowMinutes: number,
  minErrors: number,
  minRate: number,
): Promise<ScannedIncident[]> {
  const failures = await logDb.query({
    name: "support_incidents_log_failures",
    text: LOG_FAILURES,
    values: [windowMinutes, minErrors, minRate],
  });
  if (failures.rows.length === 0) return [];
  const { rows } = await db.query<ScannedIncident>({
    name: "support_incidents_from_log",
    text: RAISE_FROM_LOG,
    values: [JSON.stringify(failures.rows), windowMinutes],
  });
  return rows;
}

export async function linkCases(db: Queryable, windowMinutes: number): Promise<number> {
  const { rowCount } = await db.query({ name: "support_incidents_link_cases", text: LINK_CASES, values: [windowMinutes] });
  return rowCount ?? 0;
}

export type IncidentStatus = (typeof INCIDENT_STATUSES)[number];

export interface IncidentRow {
  id: string;
  status: IncidentStatus;
  title: string;
  public_model: string;
  error_code: string;
  public_summary: string | null;
  published_at: Date | null;
  affected: unknown;
  technical: unknown;
  corroborated_at: Date | null;
  linked_cases: number;
  updated_by: string | null;
  created_at: Date;
  updated_at: Date;
}

const COLUMNS = `i.id, i.status, i.title, i.public_model, i.error_code, i.public_summary, i.published_at, i.affected, i.technical,
  i.corroborated_at, (select count(*)::int from support_cases c where c.incident_id = i.id) as linked_cases, i.updated_by,
  i.created_at, i.updated_at`;

export const LIST_INCIDENTS_LIMIT = 100;

/** Candidate and confirmed incidents, latest change first. */
export async function listIncidentRows(db: Queryable): Promise<IncidentRow[]> {
  const { rows } = await db.query<IncidentRow>({
    name: "support_list_incidents",
    text: `select ${COLUMNS} from support_incidents i where i.status in ('candidate', 'confirmed')
      order by i.updated_at desc, i.id desc limit $1`,
    values: [LIST_INCIDENTS_LIMIT],
  });
  return rows;
}

/** The incidents of `ids`, whatever their status, latest change first. */
export async function incidentRowsByIds(db: Queryable, ids: string[]): Promise<IncidentRow[]> {
  const { rows } = await db.query<IncidentRow>({
    name: "support_incidents_by_ids",
    text: `select ${COLUMNS} from support_incidents i where i.id = any($1::uuid[]) order by i.updated_at desc, i.id desc`,
    values: [ids],
  });
  return rows;
}

export async function lockIncident(db: Queryable, id: string): Promise<IncidentRow | null> {
  const { rows } = await db.query<IncidentRow>({
    name: "support_lock_incident",
    text: `select ${COLUMNS} from support_incidents i where i.id = $1 for update`,
    values: [id],
  });
  return rows[0] ?? null;
}

export interface IncidentChange {
  status: IncidentStatus;
  publicSummary: string | null;
  /** True: published (kept at its first time if it was already); false: not published. */
  published: boolean;
  actor: string;
}

export async function writeIncident(db: Queryable, id: string, change: IncidentChange): Promise<IncidentRow> {
  const { rows } = await db.query<IncidentRow>({
    name: "support_write_incident",
    text: `update support_incidents i set status = $2, public_summary = $3,
      published_at = case when $4::boolean then coalesce(i.published_at, now()) end, updated_by = $5, updated_at = now()
    where i.id = $1 returning ${COLUMNS}`,
    values: [id, change.status, change.publicSummary, change.published, change.actor],
  });
  return rows[0]!;
}
