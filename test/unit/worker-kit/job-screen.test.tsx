import { cleanup, render } from "ink-testing-library";
import { afterEach, describe, expect, it } from "vitest";
import type { ClaimedJob, CompleteRequest, FailRequest } from "../../../worker-kit/wire/support.js";
import { JobScreen } from "../../../worker-kit/tui/job-screen.js";
import { fakeScreenProps, settle } from "./fake-screen-props.js";

afterEach(cleanup);

const NOW = Date.parse("2025-03-01T12:00:00.000Z");
const inSeconds = (s: number) => new Date(NOW + s * 1000).toISOString();

function claimedJob(fields: Partial<ClaimedJob> = {}): ClaimedJob {
  return {
    id: "33333333-3333-4333-8333-333333333333",
    kind: "answer",
    case_id: "44444444-4444-4444-8444-444444444444",
    revision: 2,
    attempt: 1,
    lease_token: "lease-token-1",
    lease_expires_at: inSeconds(300),
    context: {
      locale: "de",
      facts: {
        request_id: "req_abc",
        route: "/v1/chat/completions",
        client_protocol: "openai",
        model: "demo-small",
        status: 502,
        error_code: "upstream_error",
        error_class: "upstream",
        error_detail_available: true,
        error_summary_source: "error_code",
        error_summary: "The upstream failed.",
        streamed: false,
        input_tokens: 10,
        output_tokens: 0,
        cached_tokens: 0,
        quota_charged: 0,
        cost_usd: null,
        received_at: null,
        completed_at: "2025-03-01T11:59:00.000Z",
        latency_ms: 12,
      },
      card: null,
      transcript: [{ role: "user", content: "Why did my request fail?", created_at: "2025-03-01T11:59:30.000Z" }],
      history_truncated: false,
    },
    ...fields,
  };
}

function setup(options: { job?: ClaimedJob | null; edits?: (string | null)[]; clock?: { now: number } } = {}) {
  const clock = options.clock ?? { now: NOW };
  const job = options.job === undefined ? claimedJob() : options.job;
  const completes: CompleteRequest[] = [];
  const fails: FailRequest[] = [];
  const fake = fakeScreenProps({
    worker: {
      claim: async () => (job === null ? [] : [job]),
      complete: async (id: string, body: CompleteRequest) => {
        completes.push(body);
        return { job_id: id, outcome: "published" as const, case_revision: 3 };
      },
      fail: async (id: string, body: FailRequest) => {
        fails.push(body);
        return body.retryable
          ? { job_id: id, status: "queued" as const, available_at: "2025-03-01T12:00:10.000Z" }
          : { job_id: id, status: "failed" as const, available_at: null };
      },
    },
    edits: options.edits,
    now: () => clock.now,
  });
  const ui = render(<JobScreen {...fake.props} />);
  return { ui, clock, completes, fails, ...fake };
}

const press = async (ui: { stdin: { write(s: string): void } }, ...keys: string[]) => {
  for (const key of keys) {
    ui.stdin.write(key);
    await settle();
  }
};

describe("JobScreen", () => {
  it("claims one job as tui:<email> and shows its facts, transcript and lease", async () => {
    const { ui, recorded } = setup();
    await settle();
    expect(ui.lastFrame()).toContain("c claims");
    await press(ui, "c");
    expect(recorded.calls[0]).toEqual({ method: "claim", args: [{ limit: 1, lease_seconds: 300, worker_id: "tui:staff@example.test" }] });
    const frame = ui.lastFrame()!;
    expect(frame).toContain("answer · case 44444444-4444-4444-8444-444444444444 · rev 2 · attempt 1/3 · de");
    expect(frame).toContain("request req_abc: /v1/chat/completions demo-small → 502 upstream_error");
    expect(frame).toContain("error: The upstream failed.");
    expect(frame).toContain("lease 05:00 left");
    expect(frame).toContain("disposition: answer · card: none");
    expect(frame).toContain("user: Why did my request fail?");
  });

  it("says so when there is no job to claim", async () => {
    const { ui, recorded } = setup({ job: null });
    await settle();
    await press(ui, "c");
    expect(recorded.notices).toContain("no job to claim now");
  });

  it("counts the lease down from the injected clock: a warning under 30 s, complete disabled at zero", async () => {
    const clock = { now: NOW };
    const { ui, recorded, completes } = setup({ clock });
    await settle();
    await press(ui, "c");
    clock.now = NOW + 271_000;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(ui.lastFrame()).toContain("lease 00:29 left: under 30 s, complete or fail it now");
    clock.now = NOW + 300_000;
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(ui.lastFrame()).toContain("lease gone");
    await press(ui, "s");
    expect(completes).toEqual([]);
    expect(recorded.errors).toEqual(["the lease is gone: this job can no longer be completed; c claims another"]);
  });

  it("writes the answer and the card in $EDITOR, cycles the disposition and completes with zero usage", async () => {
    const card = { problem: "Upstream outage", facts: [], hypotheses: [], checks: [], missing: [], next_step: "wait", confidence: 0.5 };
    const { ui, completes, recorded } = setup({ edits: ["Sorry, the upstream failed.\n", JSON.stringify(card)] });
    await settle();
    await press(ui, "c", "e", "k", "d", "d", "d", "d");
    expect(recorded.edits[1]!.suffix).toBe(".json");
    expect(JSON.parse(recorded.edits[1]!.initial)).toMatchObject({ problem: "", facts: [] });
    expect(ui.lastFrame()).toContain("disposition: needs_staff · card: Upstream outage");
    expect(ui.lastFrame()).toContain("Sorry, the upstream failed.");
    // Completing publishes the answer: it asks first, and any key but y leaves the job as it was.
    await press(ui, "s");
    expect(recorded.notices.at(-1)).toBe("complete job 33333333 as needs_staff? [y/N]");
    await press(ui, "n");
    expect(completes).toEqual([]);
    expect(recorded.notices.at(-1)).toBe("cancelled: nothing changed");
    await press(ui, "s", "y");
    expect(completes).toEqual([
      {
        lease_token: "lease-token-1",
        revision: 2,
        content: "Sorry, the upstream failed.",
        card,
        evidence: [],
        usage: { model_calls: 0, tool_calls: 0, input_tokens: 0, output_tokens: 0, cost_usd: "0" },
        disposition: "needs_staff",
      },
    ]);
    expect(ui.lastFrame()).toContain("completed: published (case revision 3)");
  });

  it("keeps an invalid card's text to edit again and names the problem", async () => {
    const broken = '{"problem": "x", "facts": []}';
    const { ui, recorded, completes } = setup({ edits: [broken, null] });
    await settle();
    await press(ui, "c", "k");
    expect(recorded.errors).toEqual(["card.hypotheses: Invalid input: expected array, received undefined (k edits it again)"]);
    await press(ui, "k");
    expect(recorded.edits[1]!.initial).toBe(broken);
    await press(ui, "s", "y");
    expect(completes[0]!.card).toBeNull();
  });

  it("gives the job back with f (retryable) or fails it for good with F", async () => {
    const first = setup();
    await settle();
    await press(first.ui, "c", "f");
    expect(first.fails[0]).toMatchObject({ lease_token: "lease-token-1", error_code: "manual_release", retryable: true });
    expect(first.ui.lastFrame()).toContain("given back: queued again from 2025-03-01T12:00:10.000Z");
    first.ui.unmount();

    const second = setup();
    await settle();
    await press(second.ui, "c", "F");
    expect(second.fails).toEqual([]);
    await press(second.ui, "y");
    expect(second.fails[0]).toMatchObject({ error_code: "manual_fail", retryable: false });
    expect(second.ui.lastFrame()).toContain("failed for good (manual_fail)");
  });

  it("says how to give the bot token when there is no worker client", async () => {
    const { props, recorded } = fakeScreenProps({ worker: null });
    const ui = render(<JobScreen {...props} />);
    await settle();
    expect(ui.lastFrame()).toContain("SUPPORT_BOT_TOKEN");
    expect(ui.lastFrame()).toContain("--demo");
    await press(ui, "c");
    expect(recorded.calls).toEqual([]);
    expect(recorded.help).toEqual([]);
  });
});
