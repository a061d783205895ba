import { randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { z } from "zod";
import { startMockUpstream, type MockUpstream } from "../../src/mock-upstream/server.js";
import {
  userCaseDetailSchema,
  userCasePageSchema,
  userCaseResultSchema,
  userMessageResultSchema,
  type UserCase,
  type UserCaseDetail,
  type UserCasePage,
} from "../../worker-kit/wire/user-cases.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";

// The user side of support cases over real HTTP and a real database (docs/support.md, "Cases (user side)"). The
// cited requests are real: chat requests through the gateway, to the mock upstream or to a "leaky" upstream
// whose error body carries secrets; rows the gateway cannot produce (no error code) are inserted directly.
// Every user answer is recorded and, at the end, validated against the strict user schemas and searched for
// anything private.

const PASSWORD = "password-123";
const UPSTREAM_MODEL = "upstream-secret-model-2024";
const UPSTREAM_SECRET = "SECRET-UPSTREAM-BODY-sk-live-0123456789";
const PROVIDER_KEY = "sk-provider-key-SECRET-42";
const DRAFT_TEXT = "PRIVATE-DRAFT-only-staff-may-read-this";

let mock: MockUpstream;
let leaky: Server;
let gw: TestGateway;

interface Person {
  id: string;
  token: string;
  key: string;
}
let alice: Person;
let bob: Person;

/** Every 2xx answer of a user route, with the schema it must satisfy. */
const answers: { route: string; schema: z.ZodType; body: unknown }[] = [];
/** Every answer's text, 2xx or not, for the search for private values. */
const texts: string[] = [];

beforeAll(async () => {
  mock = await startMockUpstream();
  // An upstream that fails with a body full of secrets: the gateway must keep all of it out of the log and the facts.
  leaky = createServer((_req, res) => {
    res.writeHead(500, { "content-type": "application/json" });
    res.end(JSON.stringify({ error: { message: `upstream exploded: ${UPSTREAM_SECRET}`, type: "server_error" } }));
  });
  await new Promise<void>((resolve) => leaky.listen(0, "127.0.0.1", resolve));
  const leakyUrl = `http://127.0.0.1:${(leaky.address() as AddressInfo).port}/v1`;
  gw = await startTestGateway({
    config: {
      providers: {
        mock: { protocol: "openai", base_url: mock.baseUrl },
        leaky: { protocol: "openai", base_url: leakyUrl, api_key: PROVIDER_KEY },
      },
      models: {
        chatty: { kind: "chat", upstream: UPSTREAM_MODEL, targets: ["mock"] },
        broken: { kind: "chat", upstream: UPSTREAM_MODEL, targets: ["leaky"] },
      },
      plans: { basic: { daily_tokens: 1_000_000, context_limit: 100_000 } },
      default_plan: "basic",
      analytics: { flush_interval_ms: 20 },
    },
  });
  alice = await person("alice@example.test");
  bob = await person("bob@example.test");
});

afterAll(async () => {
  await gw?.close();
  await mock?.close();
  if (leaky) await new Promise((resolve) => leaky.close(resolve));
});

async function person(email: string): Promise<Person> {
  const user = await gw.services.auth.users.create({ email, password: PASSWORD });
  const { key } = await gw.services.auth.apiKeys.create({ user: email });
  const { token } = await logIn(gw.url, email, PASSWORD);
  return { id: user.id, token, key };
}

function schemaOf(method: string, path: string): z.ZodType {
  if (method === "GET") return path.endsWith("/cases") || path.includes("/cases?") ? userCasePageSchema : userCaseDetailSchema;
  return path.endsWith("/messages") ? userMessageResultSchema : userCaseResultSchema;
}

/** A user route call with `who`'s session; records the answer. */
async function api(who: { token: string }, method: string, path: string, body?: unknown) {
  const res = await fetch(`${gw.url}/api/v1/user/assistant${path}`, {
    method,
    headers: Object.assign(
      { authorization: `Bearer ${who.token}` },
      body === undefined ? {} : { "content-type": "application/json" },
    ) as Record<string, string>,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  texts.push(text);
  const json = JSON.parse(text) as Record<string, unknown>;
  if (res.ok) answers.push({ route: `${method} ${path}`, schema: schemaOf(method, path), body: json });
  return { status: res.status, body: json };
}

const caseOf = (r: { body: Record<string, unknown> }) => r.body.case as UserCase;

/** Makes a chat request as `who` and waits for its request-log row; returns its X-Request-Id. */
async function chatRequest(who: Person, model: string): Promise<string> {
  const res = await fetch(`${gw.url}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${who.key}`, "content-type": "application/json" },
    body: JSON.stringify({ model, messages: [{ role: "user", content: `hello ${randomUUID()}` }] }),
  });
  await res.text();
  const requestId = res.headers.get("x-request-id")!;
  for (let i = 0; i < 500; i++) {
    const { rowCount } = await gw.db.pool.query("select 1 from request_logs where request_id = $1", [requestId]);
    if (rowCount === 1) return requestId;
    await sleep(10);
  }
  throw new Error(`request ${requestId} never reached the log`);
}

/** A log row the gateway cannot produce today: a failure known by its status only (no error code). */
async function insertStatusOnlyRow(userId: string, status: number, createdAt = new Date()): Promise<string> {
  const requestId = `req_${randomUUID().replaceAll("-", "")}`;
  await gw.db.pool.query(
    `insert into request_logs (request_id, user_id, route, client_protocol, public_model, upstream_model, provider, fallback_path,
      status, input_tokens, output_tokens, cached_tokens, quota_charged, usage_source, latency_ms, streamed, created_at)
     values ($1, $2, '/v1/chat/completions', '', 'chatty', $3, 'leaky', '{leaky}', $4, 5, 0, 0, 0, 'none', 1.5, false, $5)`,
    [requestId, userId, UPSTREAM_MODEL, status, createdAt],
  );
  return requestId;
}

async function jobsOf(caseId: string) {
  const { rows } = await gw.db.pool.query<{ kind: string; revision: number; status: string }>(
    "select kind, revision, status from support_jobs where case_id = $1 order by created_at, id",
    [caseId],
  );
  return rows;
}

async function messagesOf(caseId: string) {
  const { rows } = await gw.db.pool.query<{ role: string; content: string }>(
    "select role, content from support_messages where case_id = $1 order by id",
    [caseId],
  );
  return rows;
}

describe("creating a case", () => {
  it("snapshots the facts of the user's own request and queues an answer with the question as first message", async () => {
    const requestId = await chatRequest(alice, "chatty");
    const created = await api(alice, "POST", "/cases", { request_id: requestId, locale: "en", question: "Why so slow?" });
    expect(created.status).toBe(201);
    const c = caseOf(created);
    expect(c).toMatchObject({ request_id: requestId, locale: "en", status: "open", revision: 1, handoff: false, staff_hold: false });
    expect(c.facts).toMatchObject({
      request_id: requestId,
      model: "chatty",
      client_protocol: "openai",
      status: 200,
      error_code: null,
      error_summary_source: "none",
      streamed: false,
      route: "/v1/chat/completions",
    });
    expect(c.facts!.quota_charged).toBeGreaterThan(0);
    expect(c.facts!.output_tokens).toBeGreaterThan(0);
    expect(await messagesOf(c.id)).toEqual([{ role: "user", content: "Why so slow?" }]);
    expect(await jobsOf(c.id)).toEqual([{ kind: "answer", revision: 1, status: "queued" }]);

    // The same request again: the open case is reused (200); its question is the case's next message.
    const again = await api(alice, "POST", "/cases", { request_id: requestId, locale: "en", question: "Still slow." });
    expect(again.status).toBe(200);
    expect(caseOf(again)).toMatchObject({ id: c.id, revision: 2 });
    expect(await jobsOf(c.id)).toEqual([
      { kind: "answer", revision: 1, status: "queued" },
      { kind: "answer", revision: 2, status: "queued" },
    ]);
    // Without a question nothing new is queued.
    const third = await api(alice, "POST", "/cases", { request_id: requestId, locale: "en" });
    expect(third.status).toBe(200);
    expect(caseOf(third)).toMatchObject({ id: c.id, revision: 2 });
    expect(await jobsOf(c.id)).toHaveLength(2);
  });

  it("answers the same 404 for a request not in the log and for someone else's", async () => {
    const bobs = await chatRequest(bob, "chatty");
    const unknown = await api(alice, "POST", "/cases", { request_id: "req_not_logged_yet", locale: "en" });
    const foreign = await api(alice, "POST", "/cases", { request_id: bobs, locale: "en" });
    expect(unknown.status).toBe(404);
    expect(foreign.status).toBe(404);
    const strip = (b: Record<string, unknown>) => Object.assign({}, b.error as object, { request_id: null });
    expect(strip(foreign.body)).toEqual(strip(unknown.body));
    expect(foreign.body.error).toMatchObject({ code: "not_found", type: "invalid_request_error" });
    const { rowCount } = await gw.db.pool.query("select 1 from support_cases where request_id = $1", [bobs]);
    expect(rowCount).toBe(0);
  });

  it("keeps an upstream failure's body out of the facts; a status-only row says status_fallback", async () => {
    const failed = await chatRequest(alice, "broken");
    const c = caseOf(await api(alice, "POST", "/cases", { request_id: failed, locale: "de-DE" }));
    expect(c.facts).toMatchObject({ model: "broken", error_detail_available: true, error_summary_source: "error_code" });
    expect(c.facts!.status).toBeGreaterThanOrEqual(500);
    expect(c.facts!.error_code).toEqual(expect.stringMatching(/^upstream_/));
    // Without a question an answer is queued all the same: the worker diagnoses from the facts.
    expect(await jobsOf(c.id)).toEqual([{ kind: "answer", revision: 1, status: "queued" }]);
    const { rows } = await gw.db.pool.query<{ facts: string }>("select facts::text as facts from support_cases where id = $1", [c.id]);
    for (const secret of [UPSTREAM_SECRET, PROVIDER_KEY, UPSTREAM_MODEL, "leaky", alice.id]) expect(rows[0]!.facts).not.toContain(secret);

    const statusOnly = await insertStatusOnlyRow(alice.id, 502);
    const fallback = caseOf(await api(alice, "POST", "/cases", { request_id: statusOnly, locale: "en" }));
    expect(fallback.facts).toMatchObject({
      status: 502,
      error_code: null,
      client_protocol: "",
      error_detail_available: false,
      error_summary_source: "status_fallback",
      error_summary: "HTTP 502: no valid answer came from upstream.",
    });
  });

  it("refuses a bad body naming the parameter", async () => {
    const bad = await api(alice, "POST", "/cases", { request_id: "x", locale: "not a locale!" });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatchObject({ param: "locale" });
    for (const requestId of ["", "req\u0000x", "req x", "r".repeat(201)]) {
      const res = await api(alice, "POST", "/cases", { request_id: requestId, locale: "en" });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ param: "request_id" });
    }
    const extra = await api(alice, "POST", "/cases", { request_id: "x", locale: "en", owner_user_id: bob.id });
    expect(extra.status).toBe(400);
  });

  it("opens one case for 20 concurrent creates of the same request", async () => {
    const requestId = await insertStatusOnlyRow(alice.id, 500);
    const results = await Promise.all(
      Array.from({ length: 20 }, () => api(alice, "POST", "/cases", { request_id: requestId, locale: "en" })),
    );
    const ids = new Set(results.map((r) => caseOf(r).id));
    expect(ids.size).toBe(1);
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    expect(results.filter((r) => r.status === 200)).toHaveLength(19);
    const { rows } = await gw.db.pool.query("select id from support_cases where request_id = $1", [requestId]);
    expect(rows).toHaveLength(1);
    expect(await jobsOf([...ids][0]!)).toHaveLength(1);
  });
});

describe("listing and detail", () => {
  it("pages the user's own cases newest first", async () => {
    const carol = await person("carol@example.test");
    const base = Date.now() - 60_000;
    const opened: string[] = [];
    for (let i = 0; i < 5; i++) {
      const requestId = await insertStatusOnlyRow(carol.id, 500, new Date(base + i));
      opened.push(caseOf(await api(carol, "POST", "/cases", { request_id: requestId, locale: "en" })).id);
    }
    const seen: string[] = [];
    let cursor: string | undefined;
    const sizes: number[] = [];
    do {
      const page = await api(carol, "GET", `/cases?limit=2${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      const body = page.body as unknown as UserCasePage;
      sizes.push(body.cases.length);
      seen.push(...body.cases.map((c) => c.id));
      cursor = body.next_cursor;
    } while (cursor);
    expect(sizes).toEqual([2, 2, 1]);
    expect(seen).toEqual(opened.reverse());
    const all = (await api(carol, "GET", "/cases")).body as unknown as UserCasePage;
    expect(all.cases[0]).toMatchObject({ model: "chatty", problem: null, status: "open" });
    expect(all).not.toHaveProperty("next_cursor");

    for (const limit of ["0", "101", "abc", "-1"]) {
      const res = await api(carol, "GET", `/cases?limit=${limit}`);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ param: "limit" });
    }
    const badCursor = await api(carol, "GET", "/cases?cursor=bm90LWEtY3Vyc29y");
    expect(badCursor.status).toBe(400);
    expect(badCursor.body.error).toMatchObject({ code: "invalid_cursor", param: "cursor" });
  });

  it("shows the latest 50 messages oldest first, the card, evidence and usage", async () => {
    const requestId = await insertStatusOnlyRow(alice.id, 503);
    const c = caseOf(await api(alice, "POST", "/cases", { request_id: requestId, locale: "en" }));
    await gw.db.pool.query(
      `insert into support_messages (case_id, role, content) select $1, case when n % 2 = 0 then 'user' else 'assistant' end, 'm' || n
       from generate_series(1, 55) n`,
      [c.id],
    );
    const card = {
      problem: "The upstream was down.",
      facts: [],
      hypotheses: [],
      checks: [],
      missing: [],
      next_step: "Retry.",
      confidence: 0.5,
    };
    await gw.db.pool.query("update support_cases set card = $2, model_calls = 2, input_tokens = 100, cost_usd = null where id = $1", [
      c.id,
      JSON.stringify(card),
    ]);
    const jobId = randomUUID();
    await gw.db.pool.query(
      `insert into support_evidence (case_id, job_id, ref, kind, content) values ($1, $2, 'e1', 'request_fact', '{"status": 503}')`,
      [c.id, jobId],
    );
    const detail = (await api(alice, "GET", `/cases/${c.id}`)).body as unknown as UserCaseDetail;
    expect(detail.history_truncated).toBe(true);
    expect(detail.messages).toHaveLength(50);
    expect(detail.messages[0]!.content).toBe("m6");
    expect(detail.messages.at(-1)!.content).toBe("m55");
    expect(detail.case.card).toEqual(card);
    expect(detail.case.incident_summary).toBeNull();
    expect(detail.evidence).toEqual([{ id: "e1", kind: "request_fact", content: { status: 503 }, created_at: expect.any(String) }]);
    expect(detail.usage).toEqual({ model_calls: 2, tool_calls: 0, input_tokens: 100, output_tokens: 0, cost_usd: null });

    const short = await insertStatusOnlyRow(alice.id, 503);
    const s = caseOf(await api(alice, "POST", "/cases", { request_id: short, locale: "en", question: "hi" }));
    const small = (await api(alice, "GET", `/cases/${s.id}`)).body as unknown as UserCaseDetail;
    expect(small.history_truncated).toBe(false);
    expect(small.messages).toEqual([{ role: "user", content: "hi", created_at: expect.any(String) }]);
    expect(small.usage.cost_usd).toBe("0");
  });
});

describe("case actions", () => {
  async function freshCase(who: Person = alice) {
    const requestId = await insertStatusOnlyRow(who.id, 500);
    return { requestId, c: caseOf(await api(who, "POST", "/cases", { request_id: requestId, locale: "en" })) };
  }

  it("messages queue answers; after handoff they queue private staff drafts", async () => {
    const { c } = await freshCase();
    const first = await api(alice, "POST", `/cases/${c.id}/messages`, { content: "It failed again." });
    expect(first.status).toBe(201);
    expect(first.body.message).toMatchObject({ role: "user", content: "It failed again." });
    expect(caseOf(first).revision).toBe(2);
    const handoff = await api(alice, "POST", `/cases/${c.id}/handoff`);
    expect(caseOf(handoff)).toMatchObject({ handoff: true, revision: 3 });
    // Asked twice: nothing changes.
    expect(caseOf(await api(alice, "POST", `/cases/${c.id}/handoff`)).revision).toBe(3);
    await api(alice, "POST", `/cases/${c.id}/messages`, { content: "A human please." });
    expect(await jobsOf(c.id)).toEqual([
      { kind: "answer", revision: 1, status: "queued" },
      { kind: "answer", revision: 2, status: "queued" },
      { kind: "staff_draft", revision: 4, status: "queued" },
    ]);
    for (const content of ["", "x".repeat(20_001)]) {
      const bad = await api(alice, "POST", `/cases/${c.id}/messages`, { content });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toMatchObject({ param: "content" });
    }
  });

  it("resolves, refuses messages while resolved, reopens, and refuses a reopen beside another open case", async () => {
    const { requestId, c } = await freshCase();
    const resolved = caseOf(await api(alice, "POST", `/cases/${c.id}/resolve`));
    expect(resolved).toMatchObject({ status: "resolved", revision: 2, resolved_at: expect.any(String) });
    expect(caseOf(await api(alice, "POST", `/cases/${c.id}/resolve`)).revision).toBe(2);
    expect((await api(alice, "POST", `/cases/${c.id}/messages`, { content: "hello?" })).status).toBe(409);
    expect((await api(alice, "POST", `/cases/${c.id}/handoff`)).status).toBe(409);
    expect((await api(alice, "POST", `/cases/${c.id}/retry`)).status).toBe(409);

    const reopened = caseOf(await api(alice, "POST", `/cases/${c.id}/reopen`));
    expect(reopened).toMatchObject({ status: "open", revision: 3, resolved_at: null });
    await api(alice, "POST", `/cases/${c.id}/resolve`);
    // A new case for the same request while the first is resolved; then the first cannot reopen.
    const second = await api(alice, "POST", "/cases", { request_id: requestId, locale: "en" });
    expect(second.status).toBe(201);
    expect(caseOf(second).id).not.toBe(c.id);
    const conflict = await api(alice, "POST", `/cases/${c.id}/reopen`);
    expect(conflict.status).toBe(409);
    expect(conflict.body.error).toMatchObject({ code: "conflict" });
  });

  it("retries only a failed latest answer job, at the current revision", async () => {
    const { c } = await freshCase();
    expect((await api(alice, "POST", `/cases/${c.id}/retry`)).status).toBe(409);
    await api(alice, "POST", `/cases/${c.id}/messages`, { content: "more" });
    await gw.db.pool.query("update support_jobs set status = 'failed', attempts = 3 where case_id = $1", [c.id]);
    const retried = await api(alice, "POST", `/cases/${c.id}/retry`);
    expect(retried.status).toBe(200);
    expect(caseOf(retried).revision).toBe(2);
    expect((await jobsOf(c.id)).at(-1)).toEqual({ kind: "answer", revision: 2, status: "queued" });
    expect((await api(alice, "POST", `/cases/${c.id}/retry`)).status).toBe(409);
  });
});

describe("access", () => {
  const ROUTES = (id: string): [string, string, unknown?][] => [
    ["GET", `/cases/${id}`],
    ["POST", `/cases/${id}/messages`, { content: "hi" }],
    ["POST", `/cases/${id}/resolve`],
    ["POST", `/cases/${id}/reopen`],
    ["POST", `/cases/${id}/handoff`],
    ["POST", `/cases/${id}/retry`],
  ];

  it("answers 404 for another user's case, an unknown id and a malformed id on every case route", async () => {
    const requestId = await insertStatusOnlyRow(alice.id, 500);
    const c = caseOf(await api(alice, "POST", "/cases", { request_id: requestId, locale: "en" }));
    const before = await gw.db.pool.query("select revision, status, handoff from support_cases where id = $1", [c.id]);
    for (const id of [c.id, randomUUID(), "not-a-uuid", "1"]) {
      for (const [method, path, body] of ROUTES(id)) {
        const res = await api(bob, method, path, body);
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(res.body.error).toMatchObject({ code: "not_found", message: "No such case." });
      }
    }
    const after = await gw.db.pool.query("select revision, status, handoff from support_cases where id = $1", [c.id]);
    expect(after.rows).toEqual(before.rows);
    expect(await messagesOf(c.id)).toEqual([]);
    const bobsList = (await api(bob, "GET", "/cases")).body as unknown as UserCasePage;
    expect(bobsList.cases.map((x) => x.id)).not.toContain(c.id);
  });

  it("answers 401 to an API key and to no credential on every route", async () => {
    const id = randomUUID();
    const all: [string, string, unknown?][] = [["GET", "/cases"], ["POST", "/cases", { request_id: "x", locale: "en" }], ...ROUTES(id)];
    for (const [method, path, body] of all) {
      for (const headers of [{ authorization: `Bearer ${alice.key}` }, {}] as Record<string, string>[]) {
        const res = await fetch(`${gw.url}/api/v1/user/assistant${path}`, {
          method,
          headers: Object.assign({ "content-type": "application/json" }, headers),
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        expect(res.status, `${method} ${path}`).toBe(401);
        await res.text();
      }
    }
  });
});

describe("privacy", () => {
  it("every user answer fits its strict schema and no answer holds a private draft, an account id or routing secrets", async () => {
    const requestId = await chatRequest(alice, "broken");
    const c = caseOf(await api(alice, "POST", "/cases", { request_id: requestId, locale: "en", question: "why?" }));
    await gw.db.pool.query(
      "insert into support_drafts (case_id, kind, content) values ($1, 'staff', $2), ($1, 'operator', $2), ($1, 'bug', $2)",
      [c.id, DRAFT_TEXT],
    );
    await api(alice, "POST", `/cases/${c.id}/handoff`);
    await api(alice, "POST", `/cases/${c.id}/messages`, { content: "anyone?" });
    await api(alice, "GET", `/cases/${c.id}`);
    await api(alice, "GET", "/cases?limit=100");
    await api(alice, "POST", `/cases/${c.id}/resolve`);
    await api(alice, "POST", `/cases/${c.id}/reopen`);

    expect(answers.length).toBeGreaterThan(30);
    for (const { route, schema, body } of answers) {
      const parsed = schema.safeParse(body);
      expect(parsed.success, `${route}: ${parsed.error?.message}`).toBe(true);
    }
    const secrets = [DRAFT_TEXT, UPSTREAM_SECRET, PROVIDER_KEY, UPSTREAM_MODEL, alice.id, bob.id];
    for (const text of texts) for (const secret of secrets) expect(text).not.toContain(secret);
    // Private field names, in the answers (an error may name a key the client itself sent).
    for (const { body } of answers)
      for (const name of ["owner_user_id", "user_id", "source_ref", "lease_token", "job_id", "attempts", "drafts"]) {
        expect(JSON.stringify(body)).not.toContain(`"${name}":`);
      }
  });
});
