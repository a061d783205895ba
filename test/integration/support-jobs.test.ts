import { randomUUID } from "node:crypto";
import { quickAddJob, runOnce } from "graphile-worker";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { enqueueJob, type NewJob } from "../../src/support/worker-jobs/jobs-sql.js";
import { sweepSupportJobs } from "../../src/support/worker-jobs/sweep.js";
import {
  claimResponseSchema,
  completeResponseSchema,
  failResponseSchema,
  LEASE_SECONDS,
  type ClaimedJob,
  type WorkerUsage,
} from "../../worker-kit/wire/support.js";
import { gatewayTasks, startTestGateway, type TestGateway } from "../helpers/gateway-app.js";

// The support jobs' lease state machine through the internal worker endpoints, over real HTTP against a real
// database (docs/support.md). Cases are made by SQL here: the user routes that open them are tested on their own.

const BOT_TOKEN = "support-bot-token-for-tests-0123456789abcdef";
const BASE = "/api/v1/internal/support/assistant";

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ env: { SUPPORT_BOT_TOKEN: BOT_TOKEN } });
});
afterAll(() => gw.close());
// Claims take any queued job: each test starts from an empty workspace.
beforeEach(async () => {
  await gw.db.pool.query("delete from support_cases");
});

const q = <T extends Record<string, unknown>>(text: string, values: unknown[] = []) =>
  gw.db.pool.query<T>(text, values).then((r) => r.rows);

function post(path: string, body: unknown, token: string | null = BOT_TOKEN) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (token !== null) headers.authorization = `Bearer ${token}`;
  return fetch(`${gw.url}${BASE}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
}

async function newCase(fields: { messages?: number; revision?: number } = {}): Promise<string> {
  const [row] = await q<{ id: string }>(
    "insert into support_cases (source_ref, locale, revision, facts) values ($1, 'de', $2, null) returning id",
    [`chan-${randomUUID()}`, fields.revision ?? 1],
  );
  for (let i = 0; i < (fields.messages ?? 0); i++) {
    await q("insert into support_messages (case_id, role, content) values ($1, 'user', $2)", [row!.id, `message ${i}`]);
  }
  return row!.id;
}

const queue = (caseId: string, kind: NewJob["kind"] = "answer", revision = 1) => enqueueJob(gw.db.pool, { caseId, kind, revision });

async function claim(limit = 1, worker = "worker-a", leaseSeconds = 60): Promise<ClaimedJob[]> {
  const res = await post("/jobs/claim", { limit, lease_seconds: leaseSeconds, worker_id: worker });
  expect(res.status).toBe(200);
  return claimResponseSchema.parse(await res.json()).jobs;
}

async function claimOne(worker = "worker-a"): Promise<ClaimedJob> {
  const jobs = await claim(1, worker);
  expect(jobs).toHaveLength(1);
  return jobs[0]!;
}

const usage = (cost: string | null = "0.0125"): WorkerUsage => ({
  model_calls: 2,
  tool_calls: 3,
  input_tokens: 1000,
  output_tokens: 200,
  cost_usd: cost,
});

const card = (evidenceIds: string[][] = [["ev1"]]) => ({
  problem: "The request failed with 429.",
  facts: evidenceIds.map((ids, i) => ({ field: `f${i}`, value: "x", evidence_ids: ids })),
  hypotheses: ["quota exhausted"],
  checks: [],
  missing: [],
  next_step: "Wait for the reset.",
  confidence: 0.8,
});

function completion(job: ClaimedJob, overrides: Record<string, unknown> = {}) {
  return Object.assign(
    {
      lease_token: job.lease_token,
      revision: job.revision,
      content: "Your quota ran out; it resets at 00:00 UTC.",
      card: card(),
      evidence: [{ id: "ev1", kind: "request_fact", content: { status: 429 } }],
      usage: usage(),
      disposition: "answer",
    },
    overrides,
  );
}

async function complete(job: ClaimedJob, overrides: Record<string, unknown> = {}) {
  const res = await post(`/jobs/${job.id}/complete`, completion(job, overrides));
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & { error?: { code: string; param: string | null } } };
}

async function fail(job: ClaimedJob, retryable: boolean, extra: Record<string, unknown> = {}) {
  const res = await post(
    `/jobs/${job.id}/fail`,
    Object.assign({ lease_token: job.lease_token, error_code: "model_down", retryable }, extra),
  );
  return { status: res.status, body: (await res.json()) as Record<string, unknown> & { error?: { code: string } } };
}

const jobRow = async (id: string) =>
  (
    await q<{
      status: string;
      attempts: number;
      error_code: string | null;
      cost_usd: string | null;
      model_calls: number;
      available_at: Date;
    }>("select status, attempts, error_code, cost_usd, model_calls, available_at from support_jobs where id = $1", [id])
  )[0]!;

const caseRow = async (id: string) =>
  (
    await q<{ card: unknown; handoff: boolean; cost_usd: string | null; model_calls: number; input_tokens: string }>(
      "select card, handoff, cost_usd, model_calls, input_tokens from support_cases where id = $1",
      [id],
    )
  )[0]!;

const messages = (caseId: string) =>
  q<{ role: string; content: string; job_id: string | null }>(
    "select role, content, job_id from support_messages where case_id = $1 and role = 'assistant'",
    [caseId],
  );

/** Ends the job's current lease now, as if the worker had gone silent. */
const endLease = (jobId: string) => q("update support_jobs set lease_expires_at = now() - interval '1 second' where id = $1", [jobId]);

/** Ends the job's current lease now, and lets the sweep see it. */
async function expireAndSweep(jobId: string) {
  await endLease(jobId);
  return sweepSupportJobs(gw.db.pool);
}

const makeAvailable = (jobId: string) => q("update support_jobs set available_at = now() where id = $1", [jobId]);

describe("the bot token", () => {
  it.each(["/jobs/claim", `/jobs/${randomUUID()}/complete`, `/jobs/${randomUUID()}/fail`])(
    "%s without it or with another is 401",
    async (path) => {
      expect((await post(path, {}, null)).status).toBe(401);
      expect((await post(path, {}, "not-the-bot-token")).status).toBe(401);
    },
  );
});

describe("claim", () => {
  it.each([
    [{ limit: 0, lease_seconds: 60, worker_id: "w" }, "limit"],
    [{ limit: 6, lease_seconds: 60, worker_id: "w" }, "limit"],
    [{ limit: 1, lease_seconds: 29, worker_id: "w" }, "lease_seconds"],
    [{ limit: 1, lease_seconds: 301, worker_id: "w" }, "lease_seconds"],
    [{ limit: 1, lease_seconds: 60 }, "worker_id"],
    [{ limit: 1.5, lease_seconds: 60, worker_id: "w" }, "limit"],
  ])("refuses %j with a 400 naming %s", async (body, param) => {
    const res = await post("/jobs/claim", body);
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe(param);
  });

  it("leases a job with a fresh token, an attempt and its case's bounded transcript", async () => {
    const caseId = await newCase({ messages: 55 });
    await q("update support_cases set card = $2 where id = $1", [caseId, JSON.stringify(card())]);
    const id = await queue(caseId);
    const job = await claimOne();
    expect(job).toMatchObject({ id, kind: "answer", case_id: caseId, revision: 1, attempt: 1 });
    expect(job.lease_token).toMatch(/^[\w-]{43}$/);
    expect(job.context.locale).toBe("de");
    expect(job.context.card).toEqual(card());
    expect(job.context.history_truncated).toBe(true);
    expect(job.context.transcript).toHaveLength(50);
    expect(job.context.transcript[0]!.content).toBe("message 5");
    expect(job.context.transcript[49]!.content).toBe("message 54");
    // Only the token's hash is stored.
    const [row] = await q<{ lease_token_hash: string; worker_id: string }>(
      "select lease_token_hash, worker_id from support_jobs where id = $1",
      [id],
    );
    expect(row!.lease_token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row!.lease_token_hash).not.toContain(job.lease_token);
    expect(row!.worker_id).toBe("worker-a");
    // Leased: nobody else gets it.
    expect(await claim(5, "worker-b")).toEqual([]);
  });

  it("skips jobs of resolved cases and of past revisions, and the sweep discards them", async () => {
    const resolved = await newCase();
    const moved = await newCase({ revision: 2 });
    const resolvedJob = await queue(resolved);
    const staleJob = await queue(moved, "answer", 1);
    await q("update support_cases set status = 'resolved' where id = $1", [resolved]);
    expect(await claim(5)).toEqual([]);
    expect(await sweepSupportJobs(gw.db.pool)).toEqual({ requeued: 0, failed: 0, discarded: 2 });
    expect((await jobRow(resolvedJob)).status).toBe("discarded");
    expect((await jobRow(staleJob)).status).toBe("discarded");
    expect(await sweepSupportJobs(gw.db.pool)).toEqual({ requeued: 0, failed: 0, discarded: 0 });
  });

  it("leaves answers of a held case queued until the resume; drafts are claimed", async () => {
    const caseId = await newCase();
    await q("update support_cases set staff_hold = true where id = $1", [caseId]);
    const answer = await queue(caseId);
    const draft = await queue(caseId, "operator_draft");
    expect((await claim(5)).map((j) => j.id)).toEqual([draft]);
    expect(await sweepSupportJobs(gw.db.pool)).toEqual({ requeued: 0, failed: 0, discarded: 0 });
    await q("update support_cases set staff_hold = false where id = $1", [caseId]);
    expect((await claim(5)).map((j) => j.id)).toEqual([answer]);
  });

  it("100 concurrent claims by five workers never lease one job twice", async () => {
    const cases = await Promise.all(Array.from({ length: 10 }, () => newCase()));
    const ids = new Set<string>();
    for (const caseId of cases) for (let i = 0; i < 15; i++) ids.add(await queue(caseId));
    const claims = await Promise.all(Array.from({ length: 100 }, (_, i) => claim((i % 5) + 1, `worker-${i % 5}`)));
    const claimed = claims.flatMap((jobs, i) => jobs.map((job) => ({ job, worker: `worker-${i % 5}` })));
    const claimedIds = claimed.map((c) => c.job.id);
    expect(new Set(claimedIds).size).toBe(claimedIds.length);
    expect(claimedIds.every((id) => ids.has(id))).toBe(true);
    expect(claimedIds.length).toBeGreaterThan(0);
    // Each row holds the lease of the claim that returned it, claimed once.
    const rows = await q<{ id: string; attempts: number; worker_id: string | null; status: string }>(
      "select id, attempts, worker_id, status from support_jobs",
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const { job, worker } of claimed) expect(byId.get(job.id)).toMatchObject({ attempts: 1, worker_id: worker, status: "leased" });
    expect(rows.filter((r) => r.status === "leased")).toHaveLength(claimedIds.length);
  });
});

describe("complete", () => {
  it("publishes an answer with its card and evidence, adds the usage, and a repeat changes nothing", async () => {
    const caseId = await newCase();
    await queue(caseId);
    const job = await claimOne();
    const first = await complete(job);
    expect(first.status).toBe(200);
    expect(completeResponseSchema.parse(first.body)).toEqual({ job_id: job.id, outcome: "published", case_revision: 1 });
    expect(await messages(caseId)).toEqual([{ role: "assistant", content: completion(job).content, job_id: job.id }]);
    const after = await caseRow(caseId);
    expect(after.card).toEqual(card());
    expect(after).toMatchObject({ model_calls: 2, input_tokens: "1000", cost_usd: "0.0125" });
    const evidence = await q("select ref, kind, content from support_evidence where job_id = $1", [job.id]);
    expect(evidence).toEqual([{ ref: "ev1", kind: "request_fact", content: { status: 429 } }]);
    expect(await jobRow(job.id)).toMatchObject({ status: "completed", model_calls: 2, cost_usd: "0.0125" });

    // The same token again, even with another body: the first result, nothing added.
    const again = await complete(job, { content: "Something else entirely.", disposition: "no_answer" });
    expect(again).toEqual(first);
    expect(await messages(caseId)).toHaveLength(1);
    expect(await caseRow(caseId)).toEqual(after);
    expect(await q("select ref from support_evidence where job_id = $1", [job.id])).toHaveLength(1);
  });

  it("refuses facts citing evidence the completion does not submit with a 400 naming the fact, before writing", async () => {
    const caseId = await newCase();
    await queue(caseId);
    const job = await claimOne();
    const res = await complete(job, { card: card([["ev1"], ["ev1"], ["ev1", "ev9"]]) });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: "invalid_value", param: "card.facts[2].evidence_ids" });
    const dup = await complete(job, {
      evidence: [
        { id: "ev1", kind: "k", content: 1 },
        { id: "ev1", kind: "k", content: 2 },
      ],
    });
    expect(dup.body.error).toMatchObject({ param: "evidence[1].id" });
    expect(await messages(caseId)).toEqual([]);
    expect(await jobRow(job.id)).toMatchObject({ status: "leased", model_calls: 0 });
    // The lease still stands: a correct completion goes through.
    expect((await complete(job)).body.outcome).toBe("published");
  });

  it("discards an answer whose case revision moved on", async () => {
    const caseId = await newCase();
    await queue(caseId);
    const job = await claimOne();
    await q("update support_cases set revision = revision + 1 where id = $1", [caseId]);
    const res = await complete(job);
    expect(res).toEqual({ status: 200, body: { job_id: job.id, outcome: "discarded_stale", case_revision: 2 } });
    expect(await messages(caseId)).toEqual([]);
    expect((await caseRow(caseId)).card).toBeNull();
    expect(await jobRow(job.id)).toMatchObject({ status: "discarded", model_calls: 2 });
    // The usage was spent all the same.
    expect((await caseRow(caseId)).model_calls).toBe(2);
  });

  it("a staff takeover during a running answer blocks it; a draft of the held case is still stored", async () => {
    const caseId = await newCase();
    await queue(caseId);
    const job = await claimOne();
    await q("update support_cases set staff_hold = true, revision = revision + 1 where id = $1", [caseId]);
    expect((await complete(job)).body).toEqual({ job_id: job.id, outcome: "discarded_hold", case_revision: 2 });
    expect(await messages(caseId)).toEqual([]);

    await queue(caseId, "staff_draft", 2);
    const draft = await claimOne();
    expect((await complete(draft, { revision: 2, disposition: "needs_staff" })).body.outcome).toBe("published");
    const drafts = await q("select kind, content, job_id from support_drafts where case_id = $1", [caseId]);
    expect(drafts).toEqual([{ kind: "staff", content: completion(draft).content, job_id: draft.id }]);
    expect(await messages(caseId)).toEqual([]);
  });

  it("discards a completion on a resolved case", async () => {
    const caseId = await newCase();
    await queue(caseId);
    const job = await claimOne();
    await q("update support_cases set status = 'resolved', revision = revision + 1 where id = $1", [caseId]);
    expect((await complete(job)).body.outcome).toBe("discarded_resolved");
  });

  it("stores operator and bug drafts privately, never as transcript messages", async () => {
    const caseId = await newCase();
    await queue(caseId, "operator_draft");
    await queue(caseId, "bug_draft");
    const jobs = await claim(2);
    for (const job of jobs) expect((await complete(job)).body.outcome).toBe("published");
    const kinds = await q<{ kind: string }>("select kind from support_drafts where case_id = $1 order by kind", [caseId]);
    expect(kinds.map((k) => k.kind)).toEqual(["bug", "operator"]);
    expect(await messages(caseId)).toEqual([]);
    expect(await q("select 1 from support_evidence where case_id = $1", [caseId])).toEqual([]);
  });

  it("needs_staff publishes nothing and hands the case to staff; no_answer only records", async () => {
    const caseId = await newCase();
    await queue(caseId);
    await queue(caseId);
    const [a, b] = await claim(2);
    expect((await complete(a!, { disposition: "no_answer", content: "" })).body.outcome).toBe("recorded");
    expect((await caseRow(caseId)).handoff).toBe(false);
    expect((await complete(b!, { disposition: "needs_staff" })).body.outcome).toBe("recorded");
    expect(await caseRow(caseId)).toMatchObject({ handoff: true, card: null });
    expect(await messages(caseId)).toEqual([]);
  });

  it("an answer without content is a 400 naming content", async () => {
    const caseId = await newCase();
    await queue(caseId);
    const job = await claimOne();
    const res = await complete(job, { content: "  " });
    expect(res.body.error).toMatchObject({ code: "invalid_value", param: "content" });
  });

  it("refuses a foreign token, an unknown job and a malformed id", async () => {
    const caseId = await newCase();
    await queue(caseId);
    await queue(caseId);
    const [mine, other] = await claim(2);
    const foreign = await complete(mine!, { lease_token: other!.lease_token });
    expect(foreign.status).toBe(409);
    expect(foreign.body.error!.code).toBe("lease_lost");
    const unknown = await post(`/jobs/${randomUUID()}/complete`, completion(mine!));
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe("job_not_found");
    expect((await post("/jobs/not-a-uuid/complete", completion(mine!))).status).toBe(404);
    expect(await jobRow(mine!.id)).toMatchObject({ status: "leased", model_calls: 0 });
  });

  it("keeps an unknown cost unknown in every sum", async () => {
    const caseId = await newCase();
    await queue(caseId);
    await queue(caseId);
    await queue(caseId);
    const [a, b, c] = await claim(3);
    await complete(a!, { usage: usage(null), disposition: "no_answer" });
    expect((await jobRow(a!.id)).cost_usd).toBeNull();
    expect((await caseRow(caseId)).cost_usd).toBeNull();
    await complete(b!, { usage: usage("0.5"), disposition: "no_answer" });
    expect((await jobRow(b!.id)).cost_usd).toBe("0.5");
    expect(await caseRow(caseId)).toMatchObject({ cost_usd: null, model_calls: 4 });
    // A failure's usage adds the same way.
    await fail(c!, false, { usage: usage("1") });
    expect(await caseRow(caseId)).toMatchObject({ cost_usd: null, model_calls: 6 });
    expect((await jobRow(c!.id)).cost_usd).toBe("1");
  });
});

describe("leases", () => {
  it("an expired lease is refused, and the sweep queues its job, claimable at once; the third expiry fails it", async () => {
    const caseId = await newCase();
    const id = await queue(caseId);
    const first = await claimOne();
    await endLease(id);
    const expired = await complete(first);
    expect(expired.status).toBe(409);
    expect(expired.body.error!.code).toBe("lease_expired");

    expect(await sweepSupportJobs(gw.db.pool)).toEqual({ requeued: 1, failed: 0, discarded: 0 });
    expect(await sweepSupportJobs(gw.db.pool)).toEqual({ requeued: 0, failed: 0, discarded: 0 });
    expect(await jobRow(id)).toMatchObject({ status: "queued", attempts: 1, error_code: "lease_expired" });
    expect((await complete(first)).body.error!.code).toBe("lease_expired");

    // No backoff after an expiry: the lease was the wait.
    const second = await claimOne("worker-b");
    expect(second.attempt).toBe(2);
    // The first worker's token is not this lease.
    expect((await complete(first)).body.error!.code).toBe("lease_lost");

    await expireAndSweep(id);
    const third = await claimOne();
    expect(third.attempt).toBe(3);
    expect(await expireAndSweep(id)).toEqual({ requeued: 0, failed: 1, discarded: 0 });
    expect(await jobRow(id)).toMatchObject({ status: "failed", attempts: 3, error_code: "lease_expired" });
    await makeAvailable(id);
    expect(await claim(1)).toEqual([]);
    expect((await complete(third)).status).toBe(409);
    expect(await messages(caseId)).toEqual([]);
  });

  it("a job whose shortest lease just ended is claimed by another worker with no sweep run", async () => {
    const caseId = await newCase();
    const id = await queue(caseId);
    const [first] = await claim(1, "worker-a", LEASE_SECONDS.min);
    expect(first!.id).toBe(id);
    // Leased: nobody else gets it while it runs.
    expect(await claim(1, "worker-b")).toEqual([]);
    // The lease ends now, as if worker-a had died 30 s ago.
    const [{ ended }] = (await q<{ ended: Date }>(
      "update support_jobs set lease_expires_at = clock_timestamp() where id = $1 returning lease_expires_at as ended",
      [id],
    )) as [{ ended: Date }];

    const [second] = await claim(1, "worker-b");
    expect(second).toMatchObject({ id, attempt: 2 });
    const [row] = await q<{ worker_id: string; error_code: string; available_at: Date; status: string }>(
      "select worker_id, error_code, available_at, status from support_jobs where id = $1",
      [id],
    );
    // What the sweep would have recorded: the lease expired, and the job was free from its end.
    expect(row).toEqual({ worker_id: "worker-b", error_code: "lease_expired", available_at: ended, status: "leased" });
    expect(await sweepSupportJobs(gw.db.pool)).toEqual({ requeued: 0, failed: 0, discarded: 0 });

    // The old holder is told it lost the job, and writes nothing; the new one completes it.
    const late = await complete(first!);
    expect(late).toMatchObject({ status: 409, body: { error: { code: "lease_lost" } } });
    expect((await fail(first!, true)).body.error!.code).toBe("lease_lost");
    expect((await complete(second!)).body.outcome).toBe("published");
    expect(await messages(caseId)).toEqual([{ role: "assistant", content: completion(second!).content, job_id: id }]);
  });

  it("an expired lease at the third attempt is left to the sweep, which fails it as before", async () => {
    const caseId = await newCase();
    const id = await queue(caseId);
    await q("update support_jobs set attempts = 2 where id = $1", [id]);
    const third = await claimOne();
    expect(third.attempt).toBe(3);
    await endLease(id);
    expect(await claim(5, "worker-b")).toEqual([]);
    expect(await expireAndSweep(id)).toEqual({ requeued: 0, failed: 1, discarded: 0 });
    expect(await jobRow(id)).toMatchObject({ status: "failed", attempts: 3, error_code: "lease_expired" });
  });

  it("an expired lease of a case that moved on is not claimed: the sweep requeues, then discards it", async () => {
    const caseId = await newCase();
    const id = await queue(caseId);
    const first = await claimOne();
    await endLease(id);
    await q("update support_cases set revision = revision + 1 where id = $1", [caseId]);
    expect(await claim(5, "worker-b")).toEqual([]);
    expect(await sweepSupportJobs(gw.db.pool)).toEqual({ requeued: 1, failed: 0, discarded: 1 });
    expect((await jobRow(id)).status).toBe("discarded");
    expect((await complete(first)).body.error!.code).toBe("lease_lost");
  });

  it("concurrent claims, sweeps and late completions never hand an expired job to two workers", { timeout: 60_000 }, async () => {
    const cases = await Promise.all(Array.from({ length: 8 }, () => newCase()));
    for (const caseId of cases) for (let i = 0; i < 5; i++) await queue(caseId);
    const old = await claim(5, "dead-worker");
    while (old.length < 40) old.push(...(await claim(5, "dead-worker")));
    await q("update support_jobs set lease_expires_at = now() - interval '1 second'");

    const claims = Array.from({ length: 60 }, (_, i) =>
      claim((i % 5) + 1, `worker-${i % 6}`).then((jobs) => ({ jobs, worker: `worker-${i % 6}` })),
    );
    const sweeps = Array.from({ length: 5 }, () => sweepSupportJobs(gw.db.pool));
    const late = old.slice(0, 10).map((job) => complete(job));
    const [claimed, , refused] = await Promise.all([Promise.all(claims), Promise.all(sweeps), Promise.all(late)]);

    const handed = claimed.flatMap(({ jobs, worker }) => jobs.map((job) => ({ job, worker })));
    const ids = handed.map((h) => h.job.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.length).toBeGreaterThan(0);
    for (const answer of refused) expect(answer).toMatchObject({ status: 409 });
    // A late completion holds its job's lock for a moment, and claims and sweeps skip a locked job: one more sweep
    // now records whatever was skipped.
    await sweepSupportJobs(gw.db.pool);
    const rows = await q<{ id: string; status: string; attempts: number; worker_id: string | null }>(
      "select id, status, attempts, worker_id from support_jobs",
    );
    const byId = new Map(rows.map((r) => [r.id, r]));
    for (const { job, worker } of handed) expect(byId.get(job.id)).toMatchObject({ status: "leased", attempts: 2, worker_id: worker });
    // Whatever no claim took, a sweep queued; nothing is leased to the dead worker any more.
    expect(rows.filter((r) => r.status === "leased")).toHaveLength(ids.length);
    expect(rows.filter((r) => r.status !== "leased").every((r) => r.status === "queued" && r.attempts === 1)).toBe(true);
    expect(await q("select 1 from support_messages where role = 'assistant'")).toEqual([]);
  });

  it("fail: retryable jobs come back with backoff until the third attempt, others fail at once", async () => {
    const caseId = await newCase();
    const id = await queue(caseId);
    const first = await claimOne();
    const retried = await fail(first, true);
    expect(retried.status).toBe(200);
    const body = failResponseSchema.parse(retried.body);
    expect(body).toMatchObject({ job_id: id, status: "queued" });
    expect(new Date(body.available_at!).getTime()).toBeGreaterThan(Date.now() - 1000);
    expect(await jobRow(id)).toMatchObject({ status: "queued", error_code: "model_down" });
    // The lease ended with the failure.
    expect((await fail(first, true)).body.error!.code).toBe("lease_expired");
    expect((await complete(first)).body.error!.code).toBe("lease_expired");

    await makeAvailable(id);
    expect((await fail(await claimOne(), true)).body.status).toBe("queued");
    await makeAvailable(id);
    const third = await claimOne();
    expect(third.attempt).toBe(3);
    expect((await fail(third, true)).body).toEqual({ job_id: id, status: "failed", available_at: null });
    expect(await jobRow(id)).toMatchObject({ status: "failed", attempts: 3, error_code: "model_down" });

    const other = await queue(caseId);
    const once = await claimOne();
    expect((await fail(once, false, { error_code: "bad_case" })).body).toEqual({ job_id: other, status: "failed", available_at: null });
    expect((await jobRow(other)).error_code).toBe("bad_case");
  });

  it("a fail with a foreign token is refused", async () => {
    const caseId = await newCase();
    await queue(caseId);
    await queue(caseId);
    const [a, b] = await claim(2);
    const res = await fail(a!, true, { lease_token: b!.lease_token });
    expect(res.status).toBe(409);
    expect(res.body.error!.code).toBe("lease_lost");
    expect((await jobRow(a!.id)).status).toBe("leased");
  });

  it("the support_sweep task of graphile-worker runs the sweep; an obsolete job's old lease is lost", async () => {
    const caseId = await newCase();
    const id = await queue(caseId);
    const job = await claimOne();
    await q("update support_jobs set lease_expires_at = now() - interval '1 second' where id = $1", [id]);
    await q("update support_cases set revision = revision + 1 where id = $1", [caseId]);
    const tasks = gatewayTasks(gw);
    // One run requeues the expired lease, then discards the queued job of a past revision.
    await quickAddJob({ pgPool: gw.db.pool }, "support_sweep", {});
    await runOnce({ pgPool: gw.db.pool, taskList: tasks });
    await expect.poll(async () => (await jobRow(id)).status).toBe("discarded");
    expect((await complete(job)).body.error!.code).toBe("lease_lost");
  });
});
