import type { RequestRead } from "../../db/faults.js";
import type { Pool } from "../../db/pool.js";
import { ours } from "../../openapi/operation.js";
import { readValidJson } from "../../server/body.js";
import type { BodyCaps } from "../../server/body-rules.js";
import { route } from "../../server/route.js";
import {
  incidentListSchema,
  incidentResultSchema,
  incidentScanResultSchema,
  incidentUpdateBody,
} from "@model-gateway/worker-kit/wire/incidents";
import { listIncidents, scanIncidentsNow, updateIncident } from "./incidents.js";

// The staff's incident routes, under /api/v1/assistant beside the case routes (an admin session, and its
// CSRF token on every POST: src/runtime/credential-checks.ts). Thin: validate, call ./incidents.ts, answer.

export interface SupportIncidentDeps {
  pool: Pool;
  /** The request log's database, which the scan reads (analytics.database_url, else the main one). */
  logPool: Pool;
  read: RequestRead;
  bodies: BodyCaps;
}

const list = route<SupportIncidentDeps>(
  {
    method: "get",
    path: "/api/v1/assistant/incidents",
    operationId: "listSupportIncidents",
    summary: "Candidate and confirmed incidents, with their independent affected-user and technical aggregates",
    tag: "Support staff",
    access: "admin",
    ok: { status: 200, description: "The incidents.", schema: ours("SupportIncidentList", incidentListSchema) },
  },
  ({ pool, read }) =>
    async (c) =>
      c.json(await read(() => listIncidents(pool))),
);

// Before `update` in the list: the router tries routes in order, and `scan` would otherwise be taken for an id.
const scan = route<SupportIncidentDeps>(
  {
    method: "post",
    path: "/api/v1/assistant/incidents/scan",
    operationId: "scanSupportIncidents",
    summary: "Runs the incident scan now (the same pass as the 5-minute background task) and answers the incidents it raised or refreshed",
    tag: "Support staff",
    access: "admin",
    ok: {
      status: 200,
      description: "What the scan raised and refreshed.",
      schema: ours("SupportIncidentScanResult", incidentScanResultSchema),
    },
  },
  ({ pool, logPool }) =>
    async (c) =>
      c.json(await scanIncidentsNow(pool, logPool)),
);

const update = route<SupportIncidentDeps>(
  {
    method: "post",
    path: "/api/v1/assistant/incidents/{id}",
    operationId: "updateSupportIncident",
    summary:
      "Moves an incident one step (candidate → confirmed → resolved), sets its public summary, publishes or withdraws it; " +
      "publishing needs confirmed or resolved, technical corroboration and a summary (else 409 naming what is missing)",
    tag: "Support staff",
    access: "admin",
    pathParams: { id: "The incident's ID, or an unambiguous prefix of it (at least 8 hex digits; several matches: 400 `ambiguous_id`)." },
    body: ours("SupportIncidentUpdate", incidentUpdateBody),
    ok: { status: 200, description: "The incident as it now is.", schema: ours("SupportIncidentResult", incidentResultSchema) },
    errors: ["not_found", "ambiguous_id", "conflict"],
  },
  ({ pool, bodies }) =>
    async (c) => {
      const body = await readValidJson(c, incidentUpdateBody, bodies.small);
      return c.json(await updateIncident(pool, c.req.param("id")!, body, `admin:${c.get("session").userId}`));
    },
);

export const supportIncidentRoutes = [list, scan, update];
