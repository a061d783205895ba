import { describe, expect, it } from "vitest";
import { caseChangeLine, caseDetailLines, caseListLines, incidentListLines, jobError, scanLines } from "../../cli/staff-views.js";
import type { Incident } from "../../worker-kit/wire/incidents.js";
import type { StaffCaseDetail, StaffCasePage } from "../../worker-kit/wire/staff.js";

// What both staff command families print for people: tables with a header that fit 120 columns (all of it under
// --wide), short ids every command accepts, and a job's error only while it explains the job's state.

const CASE_ID = "8cf298db-1c2e-4f3a-9b1d-0123456789ab";
const USER_ID = "11111111-2222-4333-8444-555555555555";
const T = "2026-11-29T12:30:45.123Z";

const summary: StaffCasePage["cases"][number] = {
  id: CASE_ID,
  request_id: `req_${"a".repeat(32)}`,
  locale: "pt-BR",
  status: "open",
  handoff: false,
  staff_hold: true,
  revision: 12,
  created_at: T,
  updated_at: T,
  resolved_at: null,
  model: "a-rather-long-public-model-name-2026-11-29",
  problem: "The upstream provider answered 502 to every request for twenty minutes, across all regions. ".repeat(3),
  owner_user_id: USER_ID,
  source_ref: null,
  owner_email: "ana@example.com",
  question: "Why did my request to the long model fail with 502 this morning?",
};

function job(status: StaffCaseDetail["jobs"][number]["status"], error: string | null) {
  return { id: CASE_ID, kind: "answer" as const, status, revision: 1, attempts: 2, error_code: error, created_at: T, finished_at: null };
}

const incident: Incident = {
  id: CASE_ID,
  status: "candidate",
  title: "demo-broken: upstream_unreachable",
  public_model: "demo-broken",
  error_code: "upstream_unreachable",
  public_summary: null,
  published_at: null,
  affected_users: { distinct_users: 3, cases: 4, first_case_at: T, last_case_at: T, window_minutes: 60, observed_at: T },
  technical: { requests: 40, errors: 12, error_rate: 0.3, window_minutes: 15, observed_at: T },
  technically_corroborated_at: T,
  linked_cases: 4,
  updated_by: null,
  created_at: T,
  updated_at: T,
};

describe("case views", () => {
  it("lists cases in 120 columns with a header and short ids; --wide shows every column in full", () => {
    const lines = caseListLines({ cases: [summary], next_cursor: "abc" });
    expect(lines[0]).toMatch(/^ID\s+STATUS\s+HOLD\s+REV\s+ORIGIN\s+MODEL\s+PROBLEM\s+QUESTION\s+UPDATED$/);
    expect(lines[1]).toMatch(
      /^8cf298db {2}open {4}held {2}12 {3}ana@example\.com {2}a-rather-long-.*… {2}The upstream .*… {2}Why did .*… {2}2026-11-29 12:30$/,
    );
    expect(lines.every((l) => l.length <= 120)).toBe(true);
    expect(lines[2]).toBe("next page: --cursor abc");

    const wide = caseListLines({ cases: [summary] }, true);
    expect(wide[0]).toMatch(/HANDOFF.*REQUEST.*LOCALE.*CREATED/);
    expect(wide[1]).toContain(CASE_ID);
    expect(wide[1]).toContain(`user:${USER_ID}`);
    expect(wide[1]).toContain(summary.problem!.trim());
    expect(wide[1]).toContain(summary.question);
  });

  it("shows a job's error only when it failed or waits after a failure", () => {
    expect(jobError(job("completed", "upstream_timeout"))).toBeNull();
    expect(jobError(job("leased", "upstream_timeout"))).toBeNull();
    expect(jobError(job("queued", "upstream_timeout"))).toBe("upstream_timeout");
    expect(jobError(job("failed", "lease_expired"))).toBe("lease_expired");

    const detail: StaffCaseDetail = {
      case: { ...summary, card: null, facts: null, incident_summary: null, staff_actor: null } as unknown as StaffCaseDetail["case"],
      messages: [{ role: "user", content: "it\nfails", author: null, created_at: T }],
      drafts: [],
      evidence: [],
      usage: { model_calls: 0, tool_calls: 0, input_tokens: 0, output_tokens: 0, cost_usd: null } as StaffCaseDetail["usage"],
      jobs: [job("completed", "old_error_of_a_retried_attempt")],
      history_truncated: false,
    };
    const lines = caseDetailLines(detail);
    expect(lines.join("\n")).not.toContain("old_error_of_a_retried_attempt");
    expect(lines).toContain("jobs:");
    expect(lines.some((l) => /^ID\s+KIND\s+STATUS\s+REV\s+ATTEMPTS\s+ERROR/.test(l))).toBe(true);
    expect(lines.some((l) => /^2026-11-29 12:30 {2}user {2}- +it fails$/.test(l))).toBe(true);
  });

  it("says a change in one line", () => {
    expect(caseChangeLine({ case: { ...summary, status: "open", revision: 13 } } as never, "reopened")).toBe(
      `reopened case ${CASE_ID}: open, staff hold on, revision 13`,
    );
  });
});

describe("incident views", () => {
  it("lists incidents with a header, both aggregates in short, in 120 columns", () => {
    const lines = incidentListLines({ incidents: [incident] });
    expect(lines[0]).toMatch(/^ID\s+STATUS\s+TITLE\s+USERS\s+FAILURES\s+CASES\s+PUBLISHED\s+UPDATED$/);
    expect(lines[1]).toMatch(/^8cf298db {2}candidate {2}demo-broken: upstream_unreachable {2}3 +12\/40 \(30%\) {2}4 +- +2026-11-29 12:30$/);
    expect(lines.every((l) => l.length <= 120)).toBe(true);
    expect(incidentListLines({ incidents: [incident] }, true)[0]).toMatch(/MODEL.*ERROR_CODE.*CORROBORATED.*SUMMARY.*UPDATED_BY/);
  });

  it("tells what a scan raised and refreshed", () => {
    expect(scanLines({ raised: [], refreshed: [], linked_cases: 0 })).toEqual(["scan: 0 raised, 0 refreshed, 0 case(s) linked"]);
    const lines = scanLines({ raised: [incident], refreshed: [{ ...incident, status: "confirmed" }], linked_cases: 2 });
    expect(lines[0]).toBe("scan: 1 raised, 1 refreshed, 2 case(s) linked");
    expect(lines[1]).toMatch(/^CHANGE\s+ID\s+STATUS/);
    expect(lines[2]).toMatch(/^raised {5}8cf298db {2}candidate/);
    expect(lines[3]).toMatch(/^refreshed {2}8cf298db {2}confirmed/);
  });
});
