import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import { execa } from "execa";
import pino from "pino";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { enqueueJob, type NewJob } from "../../src/support/worker-jobs/jobs-sql.js";
import {
  createRunner,
  createWorkerClient,
  defineTask,
  login,
  PermanentTaskError,
  type Runner,
  type RunnerOptions,
  type TaskResult,
  type WorkerClient,
} from "../../worker-kit/index.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";

// The runner against a real gateway and database (docs/worker-kit.md, "Runner"): leases kept honest, stop and
// SIGTERM mid-job, backoff on 429, completions discarded as stale or held, failed attempts, usage. Cases and jobs are
// made by SQL as in support-jobs.test.ts; every runner is stopped after its test.

const BOT_TOKEN = "runner-bot-token-for-tests-0123456789abcdef";
const PASSWORD = "password-123";

let gw: TestGateway;
let client: WorkerClient;
const runners: Runner[] = [];

beforeAll(async () => {
  gw = await startTestGateway({ env: { SUPPORT_BOT_TOKEN: BOT_TOKEN } });
  client = createWorkerClient({ baseUrl: gw.url, botToken: BOT_TOKEN });
  await gw.services.auth.users.create({ email: "staff@example.test", password: PASSWORD, role: "admin" });
});
afterAll(() => gw?.close());
beforeEach(async () => {
  await gw.db.pool.query("delete from support_cases");
});
afterEach(async () => {
  await Promise.all(runners.splice(0).map((r) => r.stop()));
});

const q = <T extends Record<string, unknown>>(text: string, values: unknown[] = []) =>
  gw.db.pool.query<T>(text, values).then((r) => r.rows);

async function newCase(): Promise<string> {
  const [row] = await q<{ id: string }>(
    "insert into support_cases (source_ref, locale, revision, facts) values ($1, 'en', 1, null) returning id",
    [`chan-${randomUUID()}`],
  );
  return row!.id;
}

async function queued(kind: NewJob["kind"] = "answer"): Promise<{ caseId: string; jobId: string }> {
  const caseId = await newCase();
  return { caseId, jobId: await enqueueJob(gw.db.pool, { caseId, kind, revision: 1 }) };
}

const jobRow = async (id: string) =>
  (
    await q<{
      status: string;
      attempts: number;
      error_code: string | null;
      outcome: unknown;
      cost_usd: string | null;
      model_calls: number;
    }>("select status, attempts, error_code, outcome, cost_usd, model_calls from support_jobs where id = $1", [id])
  )[0]!;

const assistantMessages = (caseId: string) => q("select content from support_messages where case_id = $1 and role = 'assistant'", [caseId]);

const ANSWER: TaskResult = { content: "Your quota ran out; it resets at 00:00 UTC.", card: null, evidence: [], disposition: "answer" };

type LogLine = Record<string, unknown> & { msg: string; job_id?: string; outcome?: string };

/** A runner logging to memory, started; `outcomes(id)` are its outcome lines for one job. */
function run(tasks: RunnerOptions["tasks"], options: Partial<RunnerOptions> = {}) {
  const lines: LogLine[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n")) if (line) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const runner = createRunner({
    client,
    tasks,
    workerId: "runner-test",
    pollIntervalMs: 100,
    logger: pino({ level: "debug" }, stream),
    ...options,
  });
  runners.push(runner);
  runner.start();
  const outcomes = (jobId: string) => lines.filter((l) => l.outcome !== undefined && l.job_id === jobId);
  return { runner, lines, outcomes };
}

async function until<T>(probe: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== false) return value as T;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The worker process of test/helpers/worker-kit-signal-worker.ts, against the test gateway. */
const signalWorker = () =>
  execa("node", ["--import", "tsx", "test/helpers/worker-kit-signal-worker.ts"], {
    env: { GATEWAY_URL: gw.url, SUPPORT_BOT_TOKEN: BOT_TOKEN },
    reject: false,
    timeout: 60_000,
  });

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
}

/** The client, with every complete and fail call recorded. */
function recording(inner: WorkerClient) {
  const calls: string[] = [];
  const wrapped: WorkerClient = {
    ...inner,
    complete: (id, body, signal) => (calls.push(`complete ${id}`), inner.complete(id, body, signal)),
    fail: (id, body, signal) => (calls.push(`fail ${id}`), inner.fail(id, body, signal)),
  };
  return { client: wrapped, calls };
}

describe("the runner", () => {
  it("completes a job with its revision and logs one outcome line with the job's id, kind and outcome", async () => {
    const { caseId, jobId } = await queued();
    const { outcomes } = run([defineTask("answer", async () => ANSWER)]);
    const line = await until(() => outcomes(jobId)[0], "the outcome");
    expect(line).toMatchObject({ job_id: jobId, kind: "answer", case_id: caseId, attempt: 1, outcome: "published", msg: "job published" });
    expect(await jobRow(jobId)).toMatchObject({ status: "completed" });
    expect(await assistantMessages(caseId)).toEqual([{ content: ANSWER.content }]);
  });

  it("fails a slow task as retryable lease_deadline when its lease runs short, aborts it, and never completes it late", async () => {
    const { caseId, jobId } = await queued();
    const { client: spy, calls } = recording(client);
    let aborted = false;
    const slow = defineTask("answer", async (_job, { signal }) => {
      await new Promise((resolve) => signal.addEventListener("abort", resolve));
      aborted = true;
      return ANSWER;
    });
    // A 30 s lease with a 27 s margin: the runner gives up on the task about 3 s after the claim.
    const { outcomes } = run([slow], { client: spy, leaseSeconds: 30, safetyMarginMs: 27_000 });
    const line = await until(() => outcomes(jobId)[0], "the outcome");
    expect(line).toMatchObject({ outcome: "failed", error_code: "lease_deadline", retryable: true, job_status: "queued" });
    expect(aborted).toBe(true);
    expect(await jobRow(jobId)).toMatchObject({ status: "queued", attempts: 1, outcome: null });
    expect(calls).toEqual([`fail ${jobId}`]);
    expect(await assistantMessages(caseId)).toEqual([]);
  });

  it("on stop() lets an in-flight job finish within the deadline, and claims nothing more", async () => {
    const first = await queued();
    const release = gate();
    const started = gate();
    const task = defineTask("answer", async () => {
      started.open();
      await release.opened;
      return ANSWER;
    });
    const { runner, outcomes } = run([task], { concurrency: 1 });
    await started.opened;
    const second = await queued();
    const stopping = runner.stop();
    release.open();
    await stopping;
    expect(outcomes(first.jobId)).toMatchObject([{ outcome: "published" }]);
    expect(await jobRow(first.jobId)).toMatchObject({ status: "completed" });
    expect(await jobRow(second.jobId)).toMatchObject({ status: "queued", attempts: 0 });
    await expect(runner.done).resolves.toBeUndefined();
  });

  it("on stop() fails a job that outlives the shutdown deadline as retryable, with its usage so far", async () => {
    const { jobId } = await queued();
    const started = gate();
    const task = defineTask("answer", async (_job, { addUsage }) => {
      addUsage({ model_calls: 1, input_tokens: 10, cost_usd: "0.004" });
      started.open();
      return new Promise<TaskResult>(() => {});
    });
    const { runner, outcomes } = run([task], { shutdownDeadlineMs: 300 });
    await started.opened;
    await runner.stop();
    expect(outcomes(jobId)).toMatchObject([{ outcome: "failed", error_code: "shutdown", retryable: true, job_status: "queued" }]);
    expect(await jobRow(jobId)).toMatchObject({ status: "queued", model_calls: 1, cost_usd: "0.004" });
  });

  it("on SIGTERM mid-job (a real process) stops claiming, finishes the job, and exits", async () => {
    const first = await queued();
    const child = signalWorker();
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    try {
      await until(() => out.includes(`started ${first.jobId}`), "the task to start", 30_000);
      const second = await queued();
      child.kill("SIGTERM");
      // The job is let go only once the signal was handled: nothing else may be claimed after it.
      await until(() => out.includes("SIGTERM received"), "the signal to arrive");
      child.stdin.write("go\n");
      const result = await child;
      expect(result.exitCode).toBe(0);
      const outcomes = result.stderr
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as LogLine)
        .filter((l) => l.outcome !== undefined);
      expect(outcomes).toMatchObject([{ job_id: first.jobId, kind: "answer", outcome: "published" }]);
      expect(await jobRow(first.jobId)).toMatchObject({ status: "completed" });
      expect(await jobRow(second.jobId)).toMatchObject({ status: "queued", attempts: 0 });
    } finally {
      child.kill("SIGKILL");
      await child.catch(() => {});
    }
  });

  it("on Ctrl-C says what it waits for; Ctrl-C again gives the job back at once and exits 130", async () => {
    const { jobId } = await queued();
    const child = signalWorker();
    let out = "";
    let err = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
    try {
      await until(() => out.includes(`started ${jobId}`), "the task to start", 30_000);
      child.kill("SIGINT");
      await until(() => err.includes("Ctrl-C again gives them back now"), "the stopping line");
      child.kill("SIGINT");
      const result = await child;
      expect(result.exitCode).toBe(130);
      const lines = result.stderr
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as LogLine);
      expect(lines.filter((l) => l.job_id === jobId).map((l) => l.msg)).toEqual(["job claimed", "job failed"]);
      expect(lines.find((l) => l.msg.startsWith("stopping"))!.msg).toBe(
        "stopping: waiting up to 20 s for 1 job(s); Ctrl-C again gives them back now",
      );
      expect(lines.find((l) => l.outcome !== undefined)).toMatchObject({
        outcome: "failed",
        error_code: "shutdown",
        retryable: true,
        job_status: "queued",
      });
      // The lease was released, not left to expire: the job is queued again for another worker.
      const [row] = await q<{ status: string; attempts: number; lease_expires_at: Date | null; worker_id: string | null }>(
        "select status, attempts, lease_expires_at, worker_id from support_jobs where id = $1",
        [jobId],
      );
      expect(row).toEqual({ status: "queued", attempts: 1, lease_expires_at: null, worker_id: null });
    } finally {
      child.kill("SIGKILL");
      await child.catch(() => {});
    }
  });

  it("backs off on 429 for at least the gateway's Retry-After, with jitter, then claims", async () => {
    const { jobId } = await queued();
    const proxy = await startRefusingProxy(gw.url, 2);
    try {
      const delays: number[] = [];
      // Records each wait and keeps it short, so the test does not sit out the Retry-After.
      const sleep = (ms: number) => (delays.push(ms), new Promise<void>((r) => setTimeout(r, Math.min(ms, 50))));
      const proxied = createWorkerClient({ baseUrl: proxy.url, botToken: BOT_TOKEN });
      const { outcomes, lines } = run([defineTask("answer", async () => ANSWER)], { client: proxied, sleep, random: () => 0.5 });
      await until(() => outcomes(jobId)[0], "the outcome");
      expect(outcomes(jobId)).toMatchObject([{ outcome: "published" }]);
      expect(proxy.refused).toBe(2);
      const backoffs = lines.filter((l) => l.msg === "claim failed; backing off");
      expect(backoffs.map((l) => l.failures)).toEqual([1, 2]);
      expect(backoffs.every((l) => (l.delay_ms as number) >= 1_000)).toBe(true);
      expect(delays.slice(0, 2)).toEqual([1_000, 1_000]);
    } finally {
      await proxy.close();
    }
  });

  it("treats a stale completion as a normal outcome, and goes on with the next job", async () => {
    const stale = await queued();
    const task = defineTask("answer", async (job) => {
      if (job.case_id === stale.caseId) await q("update support_cases set revision = revision + 1 where id = $1", [job.case_id]);
      return ANSWER;
    });
    const { outcomes } = run([task]);
    expect(await until(() => outcomes(stale.jobId)[0], "the stale outcome")).toMatchObject({
      outcome: "discarded_stale",
      case_revision: 2,
    });
    const next = await queued();
    expect(await until(() => outcomes(next.jobId)[0], "the next outcome")).toMatchObject({ outcome: "published" });
    expect(await assistantMessages(stale.caseId)).toEqual([]);
  });

  it("treats a staff takeover during the task as a normal outcome (discarded_hold)", async () => {
    const { caseId, jobId } = await queued();
    const staff = await login({ baseUrl: gw.url, email: "staff@example.test", password: PASSWORD });
    const task = defineTask("answer", async (job) => {
      await staff.change(job.case_id, "takeover");
      return ANSWER;
    });
    const { outcomes } = run([task]);
    expect(await until(() => outcomes(jobId)[0], "the outcome")).toMatchObject({ outcome: "discarded_hold" });
    expect(await jobRow(jobId)).toMatchObject({ status: "discarded" });
    expect(await assistantMessages(caseId)).toEqual([]);
  });

  it("fails a task that always throws retryably until the third attempt fails the job for good", async () => {
    const { jobId } = await queued();
    const task = defineTask("answer", async () => {
      throw new Error("the model is down");
    });
    const { outcomes } = run([task]);
    for (const attempt of [1, 2, 3]) {
      const line = await until(() => outcomes(jobId).find((l) => l.attempt === attempt), `attempt ${attempt}`);
      expect(line).toMatchObject({ outcome: "failed", error_code: "task_error", retryable: true, err: "the model is down" });
      expect(line.job_status).toBe(attempt < 3 ? "queued" : "failed");
      // Skip the gateway's backoff so the next attempt comes now.
      if (attempt < 3) await q("update support_jobs set available_at = now() where id = $1", [jobId]);
    }
    expect(await jobRow(jobId)).toMatchObject({ status: "failed", attempts: 3, error_code: "task_error" });
    expect(outcomes(jobId)).toHaveLength(3);
  });

  it("fails a job at once, not retryable, on a PermanentTaskError or when no task has its kind", async () => {
    const permanent = await queued();
    const orphan = await queued("bug_draft");
    const task = defineTask("answer", async () => {
      throw new PermanentTaskError("refused_by_model", "the model refused");
    });
    const { outcomes } = run([task]);
    expect(await until(() => outcomes(permanent.jobId)[0], "the answer's outcome")).toMatchObject({
      outcome: "failed",
      error_code: "refused_by_model",
      retryable: false,
      job_status: "failed",
    });
    expect(await until(() => outcomes(orphan.jobId)[0], "the draft's outcome")).toMatchObject({
      kind: "bug_draft",
      outcome: "failed",
      error_code: "no_task_for_kind",
      retryable: false,
    });
    expect(await jobRow(orphan.jobId)).toMatchObject({ status: "failed", attempts: 1, error_code: "no_task_for_kind" });
  });

  it("stops, and rejects done, when a claim is refused for good (a wrong bot token)", async () => {
    const wrong = createWorkerClient({ baseUrl: gw.url, botToken: "not-the-bot-token" });
    const { runner, lines } = run([defineTask("answer", async () => ANSWER)], { client: wrong });
    await expect(runner.done).rejects.toMatchObject({ name: "GatewayHttpError", status: 401 });
    expect(lines.filter((l) => l.msg === "claim refused; the runner stops")).toHaveLength(1);
  });

  it("reports usage: known costs summed exactly, an unknown one null", async () => {
    const known = await queued();
    const unknown = await queued();
    const task = defineTask("answer", async (job, { addUsage }) => {
      addUsage({ model_calls: 1, input_tokens: 100, output_tokens: 10, cost_usd: "0.1" });
      addUsage({ model_calls: 1, tool_calls: 1, input_tokens: 50, cost_usd: job.case_id === unknown.caseId ? null : "0.2" });
      return ANSWER;
    });
    const { outcomes } = run([task]);
    await until(() => outcomes(known.jobId)[0], "the first outcome");
    await until(() => outcomes(unknown.jobId)[0], "the second outcome");
    expect(outcomes(known.jobId)[0]!.usage).toEqual({
      model_calls: 2,
      tool_calls: 1,
      input_tokens: 150,
      output_tokens: 10,
      cost_usd: "0.3",
    });
    expect(await jobRow(known.jobId)).toMatchObject({ model_calls: 2, cost_usd: "0.3" });
    expect(await jobRow(unknown.jobId)).toMatchObject({ model_calls: 2, cost_usd: null });
    const cases = await q<{ id: string; cost_usd: string | null; input_tokens: string }>(
      "select id, cost_usd, input_tokens from support_cases where id = any($1)",
      [[known.caseId, unknown.caseId]],
    );
    expect(cases.find((c) => c.id === known.caseId)).toMatchObject({ cost_usd: "0.3", input_tokens: "150" });
    expect(cases.find((c) => c.id === unknown.caseId)).toMatchObject({ cost_usd: null, input_tokens: "150" });
  });
});

/** A loopback proxy to the gateway that answers the first `refusals` claims 429 with Retry-After: 1. */
async function startRefusingProxy(target: string, refusals: number) {
  const state = { refused: 0 };
  const upstream = new URL(target);
  const server = http.createServer((req, res) => {
    if (req.url?.endsWith("/jobs/claim") && state.refused < refusals) {
      state.refused++;
      req.resume();
      const error = { message: "Slow down.", type: "rate_limit_error", code: "rate_limited", param: null, request_id: null };
      res.writeHead(429, { "content-type": "application/json", "retry-after": "1" });
      res.end(JSON.stringify({ error }));
      return;
    }
    const out = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on("error", () => res.destroy());
    req.pipe(out);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    get refused() {
      return state.refused;
    },
    close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      return closed;
    },
  };
}
