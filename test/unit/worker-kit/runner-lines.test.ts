import { Writable } from "node:stream";
import pino from "pino";
import { describe, expect, it } from "vitest";
import type { ClaimedJob, ClaimRequest, FailRequest } from "../../../worker-kit/wire/support.js";
import { GatewayConnectionError } from "../../../worker-kit/client/errors.js";
import type { WorkerClient } from "../../../worker-kit/client/worker-client.js";
import { createRunner, type RunnerOptions } from "../../../worker-kit/runner/runner.js";
import { defineTask, type TaskResult } from "../../../worker-kit/runner/task.js";
import { job } from "./reference-fixtures.js";

// The runner's own lines with a fake client: a job's claim and end, the stop line, the give-back, and one outage told
// once. The integration test (test/integration/worker-kit-runner.test.ts) runs it against a real gateway.

type Line = Record<string, unknown> & { msg: string; level: number };

const ANSWER: TaskResult = { content: "Answered.", card: null, evidence: [], disposition: "answer" };
const UNREACHABLE = () => new GatewayConnectionError("http://127.0.0.1:9", "ECONNREFUSED", false);

/** A claimed job whose lease runs two minutes from now. */
function claimed(id: string): ClaimedJob {
  return { ...job("answer"), id, lease_expires_at: new Date(Date.now() + 120_000).toISOString() };
}

/** A client whose claims answer `answers` in turn (an error is thrown), then nothing; completes and fails are kept. */
function fakeClient(answers: (ClaimedJob[] | Error)[]) {
  const claims: ClaimRequest[] = [];
  const fails: { id: string; body: FailRequest }[] = [];
  const completes: string[] = [];
  const client: WorkerClient = {
    async claim(request) {
      claims.push(request);
      const next = answers.shift() ?? [];
      if (next instanceof Error) throw next;
      return next;
    },
    async complete(id, body) {
      completes.push(id);
      return { job_id: id, outcome: "published", case_revision: body.revision };
    },
    async fail(id, body) {
      fails.push({ id, body });
      return { job_id: id, status: "queued", available_at: new Date().toISOString() };
    },
    control: () => Promise.reject(new Error("not used")),
    snapshot: () => Promise.reject(new Error("not used")),
  };
  return { client, claims, fails, completes };
}

function runner(client: WorkerClient, tasks: RunnerOptions["tasks"], options: Partial<RunnerOptions> = {}) {
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n")) if (line) lines.push(JSON.parse(line) as Line);
      done();
    },
  });
  // Idle waits and backoffs (a few seconds at most) end at once; the shutdown deadline (20 s) and the lease's (two
  // minutes) only when aborted, so nothing here is decided by a clock.
  const sleep = (ms: number, signal?: AbortSignal) =>
    new Promise<void>((resolve) => {
      if (ms < 10_000 || signal?.aborted) return setImmediate(resolve);
      signal?.addEventListener("abort", () => resolve(), { once: true });
    });
  const r = createRunner({
    client,
    tasks,
    workerId: "unit",
    logger: pino({ level: "debug" }, stream),
    sleep,
    random: () => 0.5,
    shutdownDeadlineMs: 20_000,
    ...options,
  });
  return { runner: r, lines, messages: () => lines.map((l) => l.msg) };
}

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 2_000; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("the runner's lines", () => {
  it("tells when a job is claimed and how it ended, with its id, kind, case and attempt", async () => {
    const one = claimed("job-1");
    const { client } = fakeClient([[one]]);
    const { runner: r, lines } = runner(client, [defineTask("answer", async () => ANSWER)]);
    r.start();
    await until(() => lines.some((l) => l.msg === "job published"), "the end line");
    await r.stop();
    const bound = { job_id: "job-1", kind: "answer", case_id: one.case_id, attempt: 1 };
    const [claimLine, endLine] = lines.filter((l) => l.job_id === "job-1");
    expect(claimLine).toMatchObject({ ...bound, msg: "job claimed", level: 30, lease_expires_at: one.lease_expires_at });
    expect(endLine).toMatchObject({ ...bound, msg: "job published", outcome: "published" });
    expect(typeof endLine!.duration_ms).toBe("number");
  });

  it("says how long stop() waits and for how many jobs, with the hint; says nothing extra with none in flight", async () => {
    const release = gate();
    const started = gate();
    const task = defineTask("answer", async () => {
      started.open();
      await release.opened;
      return ANSWER;
    });
    const { client } = fakeClient([[claimed("a"), claimed("b")]]);
    const { runner: r, lines } = runner(client, [task]);
    r.start();
    await started.opened;
    await until(() => lines.filter((l) => l.msg === "job claimed").length === 2, "both claims");
    const stopping = r.stop({ hint: "Ctrl-C again gives them back now" });
    void r.stop({ hint: "told twice?" });
    release.open();
    await stopping;
    const said = lines.filter((l) => l.msg.startsWith("stopping"));
    expect(said).toMatchObject([{ msg: "stopping: waiting up to 20 s for 2 job(s); Ctrl-C again gives them back now", in_flight: 2 }]);

    const idle = runner(fakeClient([]).client, [task]);
    idle.runner.start();
    await idle.runner.stop({ hint: "Ctrl-C again gives them back now" });
    expect(idle.messages().filter((m) => m.startsWith("stopping"))).toEqual([]);
  });

  it("giveBack() aborts the tasks and fails their jobs as retryable at once, without waiting for the deadline", async () => {
    const aborted: string[] = [];
    const started = gate();
    const stuck = defineTask("answer", async (j, { signal }) => {
      signal.addEventListener("abort", () => aborted.push(j.id));
      started.open();
      return new Promise<TaskResult>(() => {});
    });
    const { client, fails, completes } = fakeClient([[claimed("a"), claimed("b")]]);
    const { runner: r, lines } = runner(client, [stuck]);
    r.start();
    await started.opened;
    await until(() => lines.filter((l) => l.msg === "job claimed").length === 2, "both claims");
    // The first stop waits (its deadline never comes here); the give-back ends it.
    void r.stop();
    await r.giveBack();
    await expect(r.done).resolves.toBeUndefined();
    expect(aborted.sort()).toEqual(["a", "b"]);
    expect(completes).toEqual([]);
    expect(fails.map((f) => [f.id, f.body.error_code, f.body.retryable]).sort()).toEqual([
      ["a", "shutdown", true],
      ["b", "shutdown", true],
    ]);
    expect(lines.find((l) => l.msg === "giving 2 job(s) back now")).toMatchObject({ level: 40 });
    expect(lines.filter((l) => l.outcome === "failed")).toHaveLength(2);
  });

  it("tells an outage once with the gateway's URL and what to check, then when the gateway is back", async () => {
    const { client, claims } = fakeClient([UNREACHABLE(), UNREACHABLE(), UNREACHABLE(), [claimed("after")]]);
    const { runner: r, lines } = runner(client, [defineTask("answer", async () => ANSWER)]);
    r.start();
    await until(() => lines.some((l) => l.msg === "job published"), "the job after the outage");
    await r.stop();
    expect(claims.length).toBeGreaterThanOrEqual(4);
    const warnings = lines.filter((l) => l.level >= 40);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      msg: "gateway unreachable; retrying until it answers",
      failures: 1,
      err: "cannot reach the gateway at http://127.0.0.1:9 (ECONNREFUSED): is `gateway serve` running there? set --url or GATEWAY_URL",
    });
    expect(lines.filter((l) => l.msg === "claim failed; backing off").map((l) => [l.level, l.failures])).toEqual([
      [20, 2],
      [20, 3],
    ]);
    expect(lines.filter((l) => l.msg === "gateway is back; claiming again")).toMatchObject([{ level: 30, failures: 3 }]);
    // Only the one outage: the idle claims after it say nothing.
    expect(lines.filter((l) => l.msg.startsWith("gateway"))).toHaveLength(2);
  });
});
