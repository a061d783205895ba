import { z } from "zod";
import { INCIDENT_STATUSES } from "./support.js";

// What the staff's incident routes and the CLI take and answer (docs/support.md, "Incidents"). Staff only: the
// two aggregates are private; a user sees nothing of an incident but its published summary, in the detail of a
// case it covers (user-cases.ts `incident_summary`).

export const MAX_PUBLIC_SUMMARY_CHARS = 2000;

const window = {
  window_minutes: z.int().meta({ description: "The scan's window, ending at `observed_at`." }),
  observed_at: z.iso.datetime().meta({ description: "When the scan that last saw the signal above its threshold ran." }),
};

export const affectedAggregateSchema = z.strictObject(
  Object.assign(
    {
      distinct_users: z.int().meta({ description: "Distinct owners of the open cases in the window." }),
      cases: z.int().meta({ description: "Open cases in the window whose request facts carry the signature." }),
      first_case_at: z.iso.datetime(),
      last_case_at: z.iso.datetime(),
    },
    window,
  ),
);

export const technicalAggregateSchema = z.strictObject(
  Object.assign(
    {
      requests: z.int().meta({ description: "Requests for the public model in the window." }),
      errors: z.int().meta({ description: "Of them, server-side failures (status >= 500) with this error code." }),
      error_rate: z.number().meta({ description: "`errors / requests`." }),
    },
    window,
  ),
);

export const incidentSchema = z.strictObject({
  id: z.uuid(),
  status: z.enum(INCIDENT_STATUSES),
  title: z.string(),
  public_model: z.string(),
  error_code: z.string(),
  public_summary: z.string().nullable(),
  published_at: z.iso.datetime().nullable().meta({ description: "Set while the summary shows in the linked cases." }),
  affected_users: affectedAggregateSchema
    .nullable()
    .meta({ description: "The case-cluster signal as last seen above its threshold; null when it never was." }),
  technical: technicalAggregateSchema
    .nullable()
    .meta({ description: "The request-log signal as last seen above its threshold; null when it never was." }),
  technically_corroborated_at: z.iso
    .datetime()
    .nullable()
    .meta({ description: "When the request log first corroborated it; publishing needs it." }),
  linked_cases: z.int().meta({ description: "Cases linked to the incident (their facts carry its signature)." }),
  updated_by: z.string().nullable().meta({ description: "`admin:<user id>` or `cli`; null while only the scan wrote it." }),
  created_at: z.iso.datetime(),
  updated_at: z.iso.datetime(),
});
export type Incident = z.infer<typeof incidentSchema>;

export const incidentListSchema = z.strictObject({
  incidents: z.array(incidentSchema).meta({ description: "Candidate and confirmed incidents, latest change first (at most 100)." }),
});
export type IncidentList = z.infer<typeof incidentListSchema>;

export const incidentUpdateBody = z.strictObject({
  status: z
    .enum(INCIDENT_STATUSES)
    .optional()
    .meta({ description: "The next status: candidate → confirmed → resolved (the same status changes nothing)." }),
  public_summary: z
    .string()
    .trim()
    .min(1)
    .max(MAX_PUBLIC_SUMMARY_CHARS)
    .optional()
    .meta({ description: "What the users of the linked cases will read once published (a published one changes at once)." }),
  publish: z
    .boolean()
    .optional()
    .meta({ description: "true publishes (needs confirmed or resolved, technical corroboration and a summary); false withdraws." }),
});
export type IncidentUpdate = z.infer<typeof incidentUpdateBody>;

export const incidentResultSchema = z.strictObject({ incident: incidentSchema });
export type IncidentResult = z.infer<typeof incidentResultSchema>;

export const incidentScanResultSchema = z.strictObject({
  raised: z.array(incidentSchema).meta({ description: "Incidents the scan raised: new candidates." }),
  refreshed: z.array(incidentSchema).meta({ description: "Existing incidents whose aggregates the scan refreshed." }),
  linked_cases: z.int().meta({ description: "Cases the scan newly linked to an incident." }),
});
export type IncidentScanResult = z.infer<typeof incidentScanResultSchema>;
