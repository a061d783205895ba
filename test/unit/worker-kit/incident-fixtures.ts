import type { Incident } from "../../../worker-kit/wire/incidents.js";

export function incident(fields: Partial<Incident> = {}): Incident {
  return {
    id: "11111111-1111-4111-8111-111111111111",
    status: "candidate",
    title: "demo-small failing with upstream_error",
    public_model: "demo-small",
    error_code: "upstream_error",
    public_summary: null,
    published_at: null,
    affected_users: {
      distinct_users: 3,
      cases: 4,
      first_case_at: "2025-03-01T11:10:00.000Z",
      last_case_at: "2025-03-01T11:50:00.000Z",
      window_minutes: 60,
      observed_at: "2025-03-01T12:00:00.000Z",
    },
    technical: null,
    technically_corroborated_at: null,
    linked_cases: 4,
    updated_by: null,
    created_at: "2025-03-01T11:55:00.000Z",
    updated_at: "2025-03-01T12:00:00.000Z",
    ...fields,
  };
}

export const technical = {
  requests: 40,
  errors: 12,
  error_rate: 0.3,
  window_minutes: 15,
  observed_at: "2025-03-01T12:05:00.000Z",
};
