import type { RequestRead } from "../../db/faults.js";
import type { Pool } from "../../db/pool.js";
import { ours } from "../../openapi/operation.js";
import { readValidJson } from "../../server/body.js";
import type { BodyCaps } from "../../server/body-rules.js";
import { route } from "../../server/route.js";
import { incidentListSchema, incidentResultSchema, incidentUpdateBody } from "./incident-wire.js";
import { listIncidents, updateIncident } from "./incidents.js";

// The staff's incident routes, under /api/v1/assistant beside the case routes (an admin session, and its
// CSRF token on every POST: src/runtime/credential-checks.ts). Thin: validate, call ./incidents.ts, answer.

export interface SupportIncidentDeps {
  pool: Pool;
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
    pathParams: { id: "The incident's ID." },
    body: ours("SupportIncidentUpdate", incidentUpdateBody),
    ok: { status: 200, description: "The incident as it now is.", schema: ours("SupportIncidentResult", incidentResultSchema) },
    errors: ["not_found", "conflict"],
  },
  ({ pool, bodies }) =>
    async (c) => {
      const body = await readValidJson(c, incidentUpdateBody, bodies.small);
      return c.json(await updateIncident(pool, c.req.param("id")!, body, `admin:${c.get("session").userId}`));
    },
);

export const supportIncidentRoutes = [list, update];
