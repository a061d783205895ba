import type { StaffClient } from "../../../worker-kit/client/staff-client.js";
import type { StaffCaseDetail, StaffCasePage } from "../../../worker-kit/wire/staff.js";
import type { ScreenProps } from "../../../worker-kit/tui/screen.js";

// Plain objects standing in for the staff client and the shell in the TUI's component tests: every call is
// recorded, answers come from what the test gives.

export const NOW = Date.parse("2026-03-01T12:00:00Z");
export const CASE_ID = "11111111-2222-4333-8444-555555555555";

export type Summary = StaffCasePage["cases"][number];

export function summary(overrides: Partial<Summary> = {}): Summary {
  return {
    id: CASE_ID,
    request_id: "req_1",
    locale: "en",
    status: "open",
    handoff: false,
    staff_hold: false,
    revision: 1,
    created_at: "2026-03-01T09:00:00Z",
    updated_at: "2026-03-01T09:00:00Z",
    resolved_at: null,
    model: "gpt-4o-mini",
    problem: "Upstream timed out",
    owner_user_id: "99999999-2222-4333-8444-555555555555",
    source_ref: null,
    owner_email: "ann@example.test",
    question: "Why did my request fail?",
    ...overrides,
  };
}

export function detail(overrides: Partial<StaffCaseDetail["case"]> = {}): StaffCaseDetail {
  const base = summary();
  return {
    case: {
      id: base.id,
      request_id: base.request_id,
      locale: base.locale,
      status: base.status,
      handoff: base.handoff,
      staff_hold: base.staff_hold,
      revision: base.revision,
      created_at: base.created_at,
      updated_at: base.updated_at,
      resolved_at: null,
      owner_user_id: base.owner_user_id,
      source_ref: null,
      staff_actor: null,
      incident_summary: null,
      facts: {
        request_id: "req_1",
        route: "/v1/chat/completions",
        client_protocol: "openai",
        model: "gpt-4o-mini",
        status: 504,
        error_code: "upstream_timeout",
        error_class: "upstream",
        error_detail_available: true,
        error_summary_source: "error_code",
        error_summary: "The upstream did not answer in time",
        streamed: false,
        input_tokens: 12,
        output_tokens: 0,
        cached_tokens: 0,
        quota_charged: 0,
        cost_usd: null,
        received_at: "2026-03-01T08:59:00Z",
        completed_at: "2026-03-01T08:59:30Z",
        latency_ms: 30000,
      },
      card: {
        problem: "Upstream timed out",
        facts: [{ field: "status", value: 504, evidence_ids: ["ev1"] }],
        hypotheses: ["the provider was overloaded"],
        checks: ["retry later"],
        missing: [],
        next_step: "retry with a smaller prompt",
        confidence: 0.7,
      },
      ...overrides,
    },
    messages: [
      { role: "user", content: "my request failed", author: null, created_at: "2026-03-01T09:00:00Z" },
      { role: "assistant", content: "It timed out upstream.", author: null, created_at: "2026-03-01T09:01:00Z" },
    ],
    drafts: [
      {
        id: "aaaaaaaa-2222-4333-8444-555555555555",
        kind: "operator",
        content: "Dear operator, the upstream is slow.",
        job_id: null,
        reviewed: false,
        author: null,
        created_at: "2026-03-01T09:02:00Z",
      },
    ],
    evidence: [{ id: "ev1", kind: "request_fact", content: { status: 504 }, created_at: "2026-03-01T09:01:00Z" }],
    usage: { model_calls: 1, tool_calls: 0, input_tokens: 100, output_tokens: 20, cost_usd: null },
    jobs: [
      {
        id: "bbbbbbbb-2222-4333-8444-555555555555",
        kind: "answer",
        status: "completed",
        revision: 1,
        attempts: 1,
        error_code: null,
        created_at: "2026-03-01T09:00:00Z",
        finished_at: "2026-03-01T09:01:00Z",
      },
    ],
    history_truncated: false,
  };
}

export interface Call {
  method: string;
  args: unknown[];
}

/** A StaffClient whose methods record their calls; `answers` overrides any of them. */
export function fakeStaff(answers: Partial<StaffClient> = {}): StaffClient & { calls: Call[] } {
  const calls: Call[] = [];
  const record =
    <A extends unknown[], R>(method: string, answer: (...args: A) => Promise<R>) =>
    (...args: A) => {
      calls.push({ method, args });
      return answer(...args);
    };
  const current = detail();
  const base: StaffClient = {
    session: {
      token: "t",
      csrf_token: "c",
      expires_at: "2026-03-02T00:00:00Z",
      user: { id: "u1", email: "admin@example.com", role: "admin", plan: "free", created_at: "2026-01-01T00:00:00Z" },
    },
    listCases: async () => ({ cases: [summary()] }),
    getCase: async () => current,
    change: async () => ({ case: current.case }),
    reply: async (_id, content) => ({
      case: current.case,
      message: { role: "staff", content, author: "admin:u1", created_at: "2026-03-01T12:00:00Z" },
    }),
    draft: async (id) => ({ case_id: id, draft: null, job_id: null }),
    listIncidents: async () => ({ incidents: [] }),
    updateIncident: async () => {
      throw new Error("not used");
    },
    scanIncidents: async () => ({ raised: [], refreshed: [], linked_cases: 0 }),
    logout: async () => undefined,
  };
  const merged = { ...base, ...answers };
  return {
    calls,
    session: merged.session,
    listCases: record("listCases", merged.listCases),
    getCase: record("getCase", merged.getCase),
    change: record("change", merged.change),
    reply: record("reply", merged.reply),
    draft: record("draft", merged.draft),
    listIncidents: record("listIncidents", merged.listIncidents),
    updateIncident: record("updateIncident", merged.updateIncident),
    scanIncidents: record("scanIncidents", merged.scanIncidents),
    logout: record("logout", merged.logout),
  };
}

/** The props the shell would give a screen, with its callbacks recorded. */
export function screenProps(staff: StaffClient, overrides: Partial<ScreenProps> = {}) {
  const seen = {
    routes: [] as unknown[],
    errors: [] as string[],
    notices: [] as Array<string | null>,
    help: [] as unknown[],
    cleared: 0,
    capturing: [] as boolean[],
  };
  const props: ScreenProps = {
    staff,
    worker: null,
    editText: async () => null,
    go: (route) => seen.routes.push(route),
    showError: (err) => seen.errors.push(err instanceof Error ? err.message : String(err)),
    showNotice: (message) => seen.notices.push(message),
    setHelp: (keys) => seen.help.push(keys),
    clearError: () => void (seen.cleared += 1),
    setCapturing: (on) => seen.capturing.push(on),
    active: true,
    baseUrl: "http://gateway.test",
    // Long enough that no test sees a refresh it did not ask for.
    refreshMs: 3_600_000,
    columns: 80,
    rows: 20,
    now: () => NOW,
    ...overrides,
  };
  return { props, seen };
}

/** Lets Ink handle the last write and React settle the state it set. */
export const tick = () => new Promise((resolve) => setTimeout(resolve, 20));

/** Waits until `check` holds (a frame rendered, a call made), failing with `what` if it never does. */
export async function until(check: () => boolean, what = "the condition"): Promise<unknown> {
  for (let i = 0; i < 100; i++) {
    await tick();
    // One more tick once it holds: Ink writes a frame before React runs that render's effects, and useInput
    // binds a screen's key handler (with that render's state) in an effect.
    if (check()) return tick();
  }
  throw new Error(`timed out waiting for ${what}`);
}

export const KEY = {
  up: "\u001B[A",
  down: "\u001B[B",
  pageDown: "\u001B[6~",
  pageUp: "\u001B[5~",
  enter: "\r",
  escape: "\u001B",
  tab: "\t",
};
