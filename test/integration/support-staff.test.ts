import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  staffCaseDetailSchema,
  staffCasePageSchema,
  staffCaseResultSchema,
  draftResultSchema,
  staffReplyResultSchema,
} from "../../worker-kit/wire/staff.js";
import { userCaseDetailSchema } from "../../worker-kit/wire/user-cases.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";
import { QUESTION_PREVIEW_CHARS } from "../../src/support/cases/cases-sql.js";

// The staff side of the support workspace over real HTTP and a real database (docs/support.md, "Staff"): the
// admin session and its CSRF token, the hold against a running answer (through the workers' own endpoints),
// reviewed replies on dashboard cases only, private drafts that no user response shows.

const PASSWORD = "password-123";
const BOT = "bot-token-for-the-staff-tests-0123456789";
const DRAFT = "PRIVATE-OPERATOR-DRAFT-for-staff-only";

let gw: TestGateway;
let admin: { token: string; csrf: string };
let user: { id: string; token: string; csrf: string };

async function login(email: string) {
  const { token, csrfToken } = await logIn(gw.url, email, PASSWORD);
  return { token, csrf: csrfToken };
}

beforeAll(async () => {
  gw = await startTestGateway({ env: { SUPPORT_BOT_TOKEN: BOT } });
  await gw.services.auth.users.create({ email: "staff@example.test", password: PASSWORD, role: "admin" });
  const u = await gw.services.auth.users.create({ email: "user@example.test", password: PASSWORD });
  admin = await login("staff@example.test");
  user = Object.assign({ id: u.id }, await login("user@example.test"));
});

afterAll(() => gw?.close());

async function call(
  path: string,
  opts: { method?: string; who?: { token: string; csrf: string }; csrf?: boolean; body?: unknown; bot?: boolean } = {},
) {
  const headers: Record<string, string> = {};
  if (opts.bot) headers.authorization = `Bearer ${BOT}`;
  else if (opts.who) headers.authorization = `Bearer ${opts.who.token}`;
  if (opts.who && opts.csrf !== false) headers["x-csrf-token"] = opts.who.csrf;
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${gw.url}${path}`, {
    method: opts.method ?? "GET",
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  // The answers' shapes are checked with their schemas where it matters; here they are read loosely.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: res.status, text, body: (text ? JSON.parse(text) : null) as Record<string, any> };
}

const staff = (path: string, method = "POST", body?: unknown) =>
  call(`/api/v1/assistant${path}`, { method, who: admin, body: body ?? (method === "POST" ? {} : undefined) });

/** A dashboard case of the user's, on a request-log row of theirs (written directly: its content does not matter here). */
async function openCase(question?: string): Promise<{ id: string; revision: number }> {
  const requestId = `req_${randomUUID().replaceAll("-", "")}`;
  await gw.db.pool.query(
    `insert into request_logs (request_id, user_id, key_id, route, client_protocol, public_model, upstream_model, provider, fallback_path,
       status, error_class, error_code, input_tokens, output_tokens, cached_tokens, quota_charged, usage_source, latency_ms, ttfb_ms,
       streamed, received_at, created_at)
     values ($1, $2, null, '/v1/chat/completions', 'openai', 'm1', 'm1-upstream', 'main', '{}', 502, 'upstream', 'upstream_error', 10, 0, 0,
       0, 'none', 12.5, null, false, now(), now())`,
    [requestId, user.id],
  );
  const res = await call("/api/v1/user/assistant/cases", {
    method: "POST",
    who: user,
    body: { request_id: requestId, locale: "en", question },
  });
  expect(res.status).toBe(201);
  return { id: res.body.case.id, revision: res.body.case.revision };
}

async function claim() {
  const res = await call("/api/v1/internal/support/assistant/jobs/claim", {
    method: "POST",
    bot: true,
    body: { limit: 5, lease_seconds: 60, worker_id: "staff-test" },
  });
  expect(res.status).toBe(200);
  return res.body.jobs as { id: string; kind: string; case_id: string; revision: number; lease_token: string }[];
}

const usage = { model_calls: 1, tool_calls: 0, input_tokens: 10, output_tokens: 5, cost_usd: null };

describe("staff routes", () => {
  it("are admin-only: a user session is 403, no CSRF token on a POST is 403, no session 401", async () => {
    const c = await openCase();
    expect((await call("/api/v1/assistant/cases", { who: user })).status).toBe(403);
    expect((await call(`/api/v1/assistant/cases/${c.id}/takeover`, { method: "POST", who: admin, csrf: false })).status).toBe(403);
    expect((await call("/api/v1/assistant/cases")).status).toBe(401);
    expect((await staff(`/cases/${randomUUID()}`, "GET")).status).toBe(404);
    expect((await staff("/cases/not-a-uuid/takeover")).status).toBe(404);
  });

  it("list every case with its owner, newest first, keyset-paginated", async () => {
    await openCase();
    await openCase("Why did my request fail?");
    const first = await staff("/cases?limit=1", "GET");
    expect(first.status).toBe(200);
    expect(staffCasePageSchema.safeParse(first.body).success).toBe(true);
    expect(first.body.cases[0].owner_user_id).toBe(user.id);
    // Who asked and what, for the queue's user and question columns (a case opened without a question has none).
    expect(first.body.cases[0]).toMatchObject({ owner_email: "user@example.test", question: "Why did my request fail?" });
    const second = await staff(`/cases?limit=1&cursor=${first.body.next_cursor}`, "GET");
    expect(second.body.cases[0].id).not.toBe(first.body.cases[0].id);
    expect(second.body.cases[0].question).toBeNull();
    expect((await staff("/cases?limit=0", "GET")).status).toBe(400);

    // A long question is its opening in the list (a page stays small), whole in the case's detail.
    const long = `${"Why ".repeat(100)}did it fail?`;
    const c = await openCase(long);
    const listed = await staff("/cases?limit=1", "GET");
    expect(listed.body.cases[0]).toMatchObject({ id: c.id, question: long.slice(0, QUESTION_PREVIEW_CHARS) });
    expect(QUESTION_PREVIEW_CHARS).toBeLessThan(long.length);
    const detail = await staff(`/cases/${c.id}`, "GET");
    expect(detail.body.messages.find((m: { role: string }) => m.role === "user").content).toBe(long);
  });

  it("a takeover during a running answer keeps it from publishing; the hold lasts until resume", async () => {
    const c = await openCase();
    const jobs = (await claim()).filter((j) => j.case_id === c.id);
    expect(jobs).toHaveLength(1);
    const taken = await staff(`/cases/${c.id}/takeover`);
    expect(taken.status).toBe(200);
    expect(staffCaseResultSchema.safeParse(taken.body).success).toBe(true);
    expect(taken.body.case).toMatchObject({ staff_hold: true, revision: c.revision + 1, staff_actor: expect.stringMatching(/^admin:/) });
    // Taking over twice changes nothing.
    expect((await staff(`/cases/${c.id}/takeover`)).body.case.revision).toBe(c.revision + 1);
    const done = await call(`/api/v1/internal/support/assistant/jobs/${jobs[0]!.id}/complete`, {
      method: "POST",
      bot: true,
      body: {
        lease_token: jobs[0]!.lease_token,
        revision: jobs[0]!.revision,
        content: "An answer",
        card: null,
        evidence: [],
        usage,
        disposition: "answer",
      },
    });
    expect(done.status).toBe(200);
    expect(["discarded_hold", "discarded_stale"]).toContain(done.body.outcome);
    const seen = await call(`/api/v1/user/assistant/cases/${c.id}`, { who: user });
    expect(seen.body.messages.filter((m: { role: string }) => m.role === "assistant")).toEqual([]);
    const resumed = await staff(`/cases/${c.id}/resume`);
    expect(resumed.body.case.staff_hold).toBe(false);
  });

  it("a reviewed reply joins the transcript with its author and bumps the revision; resolve ends the case", async () => {
    const c = await openCase();
    const reply = await staff(`/cases/${c.id}/messages`, "POST", { content: "We are looking into it." });
    expect(reply.status).toBe(201);
    expect(staffReplyResultSchema.safeParse(reply.body).success).toBe(true);
    expect(reply.body.message).toMatchObject({ role: "staff", author: expect.stringMatching(/^admin:/) });
    expect(reply.body.case.revision).toBe(c.revision + 1);
    const seen = await call(`/api/v1/user/assistant/cases/${c.id}`, { who: user });
    expect(seen.body.messages.at(-1)).toEqual({ role: "staff", content: "We are looking into it.", created_at: expect.any(String) });
    expect((await staff(`/cases/${c.id}/messages`, "POST", { content: "" })).status).toBe(400);
    const resolved = await staff(`/cases/${c.id}/resolve`);
    expect(resolved.body.case.status).toBe("resolved");
    expect((await staff(`/cases/${c.id}/messages`, "POST", { content: "late" })).status).toBe(409);
  });

  it("a chat-platform case takes no in-app reply (409)", async () => {
    const { rows } = await gw.db.pool.query<{ id: string }>(
      "insert into support_cases (source_ref, locale) values ($1, 'en') returning id",
      [`chan-${randomUUID()}`],
    );
    const res = await staff(`/cases/${rows[0]!.id}/messages`, "POST", { content: "hello" });
    expect(res.status).toBe(409);
  });

  it("drafts stay private: a reviewed one is saved, {} queues a worker's, and no user response shows either", async () => {
    const c = await openCase();
    const saved = await staff(`/cases/${c.id}/operator-draft`, "POST", { content: DRAFT });
    expect(saved.status).toBe(201);
    expect(draftResultSchema.safeParse(saved.body).success).toBe(true);
    expect(saved.body.draft).toMatchObject({ kind: "operator", reviewed: true, content: DRAFT });
    const queued = await staff(`/cases/${c.id}/bug-draft`, "POST", {});
    expect(queued.status).toBe(202);
    const job = (await claim()).find((j) => j.id === queued.body.job_id);
    expect(job?.kind).toBe("bug_draft");
    const detail = await staff(`/cases/${c.id}`, "GET");
    expect(staffCaseDetailSchema.safeParse(detail.body).success).toBe(true);
    expect(detail.body.drafts.map((d: { content: string }) => d.content)).toContain(DRAFT);
    expect(detail.body.jobs.some((j: { kind: string }) => j.kind === "bug_draft")).toBe(true);
    const seen = await call(`/api/v1/user/assistant/cases/${c.id}`, { who: user });
    expect(userCaseDetailSchema.safeParse(seen.body).success).toBe(true);
    expect(seen.text).not.toContain(DRAFT);
    expect(seen.text).not.toContain(user.id);
    expect((await staff(`/cases/${c.id}/operator-draft`, "POST", { content: 5 })).status).toBe(400);
  });
});

describe("staff reopen", () => {
  const resolvedCase = async () => {
    const c = await openCase();
    const resolved = await staff(`/cases/${c.id}/resolve`);
    expect(resolved.body.case).toMatchObject({ status: "resolved", revision: c.revision + 1 });
    return { id: c.id, revision: resolved.body.case.revision as number };
  };

  it("opens a resolved case again: a new revision, resolved_at cleared, the hold kept, the actor recorded", async () => {
    const c = await openCase();
    await staff(`/cases/${c.id}/takeover`);
    const resolved = await staff(`/cases/${c.id}/resolve`);
    const reopened = await staff(`/cases/${c.id}/reopen`);
    expect(reopened.status).toBe(200);
    expect(staffCaseResultSchema.safeParse(reopened.body).success).toBe(true);
    expect(reopened.body.case).toMatchObject({
      status: "open",
      resolved_at: null,
      staff_hold: true,
      revision: resolved.body.case.revision + 1,
      staff_actor: expect.stringMatching(/^admin:/),
    });
    // Staff can write to it again, and the user sees it open.
    expect((await staff(`/cases/${c.id}/messages`, "POST", { content: "Back on it." })).status).toBe(201);
    expect((await call(`/api/v1/user/assistant/cases/${c.id}`, { who: user })).body.case.status).toBe("open");
  });

  it("refuses an open case (409 case_not_resolved) and an unknown or malformed id (404)", async () => {
    const c = await openCase();
    const open = await staff(`/cases/${c.id}/reopen`);
    expect(open.status).toBe(409);
    expect(open.body.error).toMatchObject({ code: "case_not_resolved", type: "conflict_error" });
    expect((await staff(`/cases/${c.id}`, "GET")).body.case.revision).toBe(c.revision);
    expect((await staff(`/cases/${randomUUID()}/reopen`)).body.error.code).toBe("not_found");
    expect((await staff("/cases/not-a-uuid/reopen")).status).toBe(404);
  });

  it("is admin-only with CSRF: a user session is 403, no CSRF token 403, no session 401; nothing changes", async () => {
    const c = await resolvedCase();
    expect((await call(`/api/v1/assistant/cases/${c.id}/reopen`, { method: "POST", who: user, body: {} })).status).toBe(403);
    expect((await call(`/api/v1/assistant/cases/${c.id}/reopen`, { method: "POST", who: admin, csrf: false, body: {} })).status).toBe(403);
    expect((await call(`/api/v1/assistant/cases/${c.id}/reopen`, { method: "POST", body: {} })).status).toBe(401);
    expect((await staff(`/cases/${c.id}`, "GET")).body.case).toMatchObject({ status: "resolved", revision: c.revision });
  });

  it("refuses a reopen beside another open case of the same request (409 conflict)", async () => {
    const c = await resolvedCase();
    const { rows } = await gw.db.pool.query<{ request_id: string }>("select request_id from support_cases where id = $1", [c.id]);
    const again = await call("/api/v1/user/assistant/cases", {
      method: "POST",
      who: user,
      body: { request_id: rows[0]!.request_id, locale: "en" },
    });
    expect(again.status).toBe(201);
    const res = await staff(`/cases/${c.id}/reopen`);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe("conflict");
  });

  it("of concurrent reopens exactly one wins; the others are told case_not_resolved; one new revision", async () => {
    const c = await resolvedCase();
    const answers = await Promise.all(Array.from({ length: 5 }, () => staff(`/cases/${c.id}/reopen`)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409, 409, 409]);
    expect(answers.filter((a) => a.status === 409).every((a) => a.body.error.code === "case_not_resolved")).toBe(true);
    expect((await staff(`/cases/${c.id}`, "GET")).body.case).toMatchObject({ status: "open", revision: c.revision + 1 });
  });
});

describe("case ids", () => {
  /** A chat-platform case with a chosen id (its content does not matter here). */
  const caseWithId = async (id: string) => {
    await gw.db.pool.query("insert into support_cases (id, source_ref, locale) values ($1, $2, 'en')", [id, `chan-${randomUUID()}`]);
  };

  it("an unambiguous prefix names the case on every staff route; an ambiguous one is 400 ambiguous_id; none 404", async () => {
    const head = randomUUID().slice(0, 8);
    await caseWithId(`${head}-aaaa-4aaa-8aaa-aaaaaaaaaaaa`);
    await caseWithId(`${head}-bbbb-4bbb-8bbb-bbbbbbbbbbbb`);
    const shown = await staff(`/cases/${head}-aa`, "GET");
    expect(shown.status).toBe(200);
    expect(shown.body.case.id).toBe(`${head}-aaaa-4aaa-8aaa-aaaaaaaaaaaa`);
    const taken = await staff(`/cases/${head.toUpperCase()}BBBB/takeover`);
    expect(taken.body.case).toMatchObject({ id: `${head}-bbbb-4bbb-8bbb-bbbbbbbbbbbb`, staff_hold: true });
    const ambiguous = await staff(`/cases/${head}`, "GET");
    expect(ambiguous.status).toBe(400);
    expect(ambiguous.body.error).toMatchObject({
      code: "ambiguous_id",
      message: `The id prefix ${head} matches 2 cases; give more of the id.`,
    });
    expect((await staff(`/cases/${head}/resolve`)).body.error.code).toBe("ambiguous_id");
    expect((await staff(`/cases/${head}-cc`, "GET")).status).toBe(404);
    expect((await staff(`/cases/${head.slice(0, 7)}`, "GET")).status).toBe(404);
  });
});
