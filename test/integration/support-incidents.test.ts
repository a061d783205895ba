import { randomUUID } from "node:crypto";
import { quickAddJob, runOnce } from "graphile-worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { incidentListSchema, incidentResultSchema, incidentScanResultSchema } from "../../worker-kit/wire/incidents.js";
import { crontab } from "../../src/jobs/tasks.js";
import { INCIDENT_THRESHOLDS, scanIncidents } from "../../src/support/incidents/incidents.js";
import { userCaseDetailSchema } from "../../worker-kit/wire/user-cases.js";
import { gatewayTasks, startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";

// Incidents over real HTTP and a real database (docs/support.md, "Incidents"): the scan raising candidates from
// case clusters and from the request log separately, its idempotence, the staff's transitions and publishing
// rule, and what users see of it (the published summary, never an aggregate).

const PASSWORD = "password-123";

let gw: TestGateway;
let admin: { token: string; csrf: string };
const users: { id: string; token: string; csrf: string }[] = [];

async function login(email: string) {
  const { token, csrfToken } = await logIn(gw.url, email, PASSWORD);
  return { token, csrf: csrfToken };
}

beforeAll(async () => {
  gw = await startTestGateway();
  await gw.services.auth.users.create({ email: "staff@example.test", password: PASSWORD, role: "admin" });
  admin = await login("staff@example.test");
  for (let i = 0; i < INCIDENT_THRESHOLDS.caseMinUsers; i++) {
    const u = await gw.services.auth.users.create({ email: `user${i}@example.test`, password: PASSWORD });
    users.push(Object.assign({ id: u.id }, await login(`user${i}@example.test`)));
  }
});

afterAll(() => gw?.close());

async function call(path: string, opts: { method?: string; who: { token: string; csrf: string }; body?: unknown }) {
  const headers: Record<string, string> = { authorization: `Bearer ${opts.who.token}`, "x-csrf-token": opts.who.csrf };
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${gw.url}${path}`, {
    method: opts.method ?? "GET",
    headers,
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
  });
  const text = await res.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: res.status, text, body: (text ? JSON.parse(text) : null) as Record<string, any> };
}

const list = async () => {
  const res = await call("/api/v1/assistant/incidents", { who: admin });
  expect(res.status).toBe(200);
  expect(incidentListSchema.safeParse(res.body).success).toBe(true);
  return res.body.incidents as { id: string; public_model: string; error_code: string; [k: string]: unknown }[];
};
const update = (id: string, body: unknown) => call(`/api/v1/assistant/incidents/${id}`, { method: "POST", who: admin, body });

/** Request-log rows of a user: `failures` server-side failures with `code`, then `successes`. */
async function logRequests(userId: string, model: string, code: string, failures: number, successes = 0): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < failures + successes; i++) {
    const requestId = `req_${randomUUID().replaceAll("-", "")}`;
    const failed = i < failures;
    await gw.db.pool.query(
      `insert into request_logs (request_id, user_id, key_id, route, client_protocol, public_model, upstream_model, provider, fallback_path,
         status, error_class, error_code, input_tokens, output_tokens, cached_tokens, quota_charged, usage_source, latency_ms, ttfb_ms,
         streamed, received_at, created_at)
       values ($1, $2, null, '/v1/chat/completions', 'openai', $3, 'secret-upstream', 'main', '{}', $4, $5, $6, 10, 0, 0, 0, 'none', 12.5,
         null, false, now(), now())`,
      [requestId, userId, model, failed ? 502 : 200, failed ? "upstream_error" : null, failed ? code : null],
    );
    ids.push(requestId);
  }
  return ids;
}

async function openCase(user: { id: string; token: string; csrf: string }, requestId: string): Promise<string> {
  const res = await call("/api/v1/user/assistant/cases", { method: "POST", who: user, body: { request_id: requestId, locale: "en" } });
  expect(res.status).toBe(201);
  return res.body.case.id as string;
}

const model = () => `m-${randomUUID().slice(0, 8)}`;

describe("the support_incidents scan", () => {
  it("raises a candidate from a cluster of cases alone, links them, and a rerun updates rather than duplicates", async () => {
    const m = model();
    const caseIds: string[] = [];
    for (const u of users) caseIds.push(await openCase(u, (await logRequests(u.id, m, "upstream_error", 1))[0]!));
    const before = (await list()).filter((i) => i.public_model === m);
    expect(before).toEqual([]);

    const first = await scanIncidents(gw.db.pool);
    expect(first.fromCases).toBeGreaterThanOrEqual(1);
    const raised = (await list()).filter((i) => i.public_model === m);
    expect(raised).toHaveLength(1);
    expect(raised[0]).toMatchObject({
      status: "candidate",
      error_code: "upstream_error",
      technical: null,
      technically_corroborated_at: null,
      linked_cases: users.length,
    });
    expect(raised[0]!.affected_users).toMatchObject({ distinct_users: users.length, cases: users.length });

    await scanIncidents(gw.db.pool);
    const again = (await list()).filter((i) => i.public_model === m);
    expect(again.map((i) => i.id)).toEqual([raised[0]!.id]);
    expect(again[0]!.linked_cases).toBe(users.length);
    const { rows } = await gw.db.pool.query("select count(*)::int as n from support_incidents where public_model = $1", [m]);
    expect(rows[0].n).toBe(1);
  });

  it("too few users raise nothing", async () => {
    const m = model();
    await openCase(users[0]!, (await logRequests(users[0]!.id, m, "upstream_error", 1))[0]!);
    await scanIncidents(gw.db.pool);
    expect((await list()).filter((i) => i.public_model === m)).toEqual([]);
  });

  it("raises a corroborated candidate from the request log alone, by error rate over the window", async () => {
    const m = model();
    // Below the rate: the minimum of failures among too many successes.
    const needed = INCIDENT_THRESHOLDS.logMinErrors;
    await logRequests(users[0]!.id, m, "upstream_timeout", needed, Math.ceil(needed / INCIDENT_THRESHOLDS.logMinErrorRate));
    await scanIncidents(gw.db.pool);
    expect((await list()).filter((i) => i.public_model === m)).toEqual([]);

    await logRequests(users[0]!.id, m, "upstream_timeout", needed * 2);
    await scanIncidents(gw.db.pool);
    const raised = (await list()).filter((i) => i.public_model === m);
    expect(raised).toHaveLength(1);
    expect(raised[0]).toMatchObject({ status: "candidate", error_code: "upstream_timeout", affected_users: null, linked_cases: 0 });
    expect(raised[0]!.technical).toMatchObject({ errors: needed * 3, window_minutes: INCIDENT_THRESHOLDS.logWindowMinutes });
    expect(raised[0]!.technically_corroborated_at).toEqual(expect.any(String));
  });
});

describe("the support_incidents task", () => {
  it("is scheduled with a jobKey and runs the scan under graphile-worker", async () => {
    expect(crontab).toMatch(/^\S+ \S+ \S+ \S+ \S+ support_incidents \?jobKey=support_incidents/m);
    const m = model();
    await logRequests(users[0]!.id, m, "upstream_error", INCIDENT_THRESHOLDS.logMinErrors);
    const tasks = gatewayTasks(gw);
    await quickAddJob({ pgPool: gw.db.pool }, "support_incidents", {});
    await runOnce({ pgPool: gw.db.pool, taskList: tasks });
    await expect.poll(async () => (await list()).filter((i) => i.public_model === m)).toHaveLength(1);
  });
});

describe("staff incident routes", () => {
  it("are admin-only: a user session is 403 on both", async () => {
    expect((await call("/api/v1/assistant/incidents", { who: users[0]! })).status).toBe(403);
    expect((await call(`/api/v1/assistant/incidents/${randomUUID()}`, { method: "POST", who: users[0]!, body: {} })).status).toBe(403);
    expect((await update(randomUUID(), { status: "confirmed" })).status).toBe(404);
    expect((await update("not-a-uuid", {})).status).toBe(404);
  });

  it("publish only when confirmed and corroborated; the summary then shows in the linked cases, no aggregate ever does", async () => {
    const m = model();
    const caseIds: string[] = [];
    for (const u of users) caseIds.push(await openCase(u, (await logRequests(u.id, m, "upstream_error", 1))[0]!));
    await scanIncidents(gw.db.pool);
    const incident = (await list()).find((i) => i.public_model === m)!;
    const SUMMARY = "The model answered with errors between 08:00 and 08:20 UTC; it is fixed.";

    const asCandidate = await update(incident.id, { public_summary: SUMMARY, publish: true });
    expect(asCandidate.status).toBe(409);
    expect(asCandidate.body.error.message).toMatch(/confirmed or resolved/);
    expect(asCandidate.body.error.message).toMatch(/technical corroboration/);
    expect((await update(incident.id, { status: "resolved" })).status).toBe(409);

    const confirmed = await update(incident.id, { status: "confirmed", public_summary: SUMMARY });
    expect(confirmed.status).toBe(200);
    expect(incidentResultSchema.safeParse(confirmed.body).success).toBe(true);
    expect(confirmed.body.incident).toMatchObject({
      status: "confirmed",
      published_at: null,
      updated_by: expect.stringMatching(/^admin:/),
    });
    const uncorroborated = await update(incident.id, { publish: true });
    expect(uncorroborated.status).toBe(409);
    expect(uncorroborated.body.error.message).toMatch(/technical corroboration/);
    expect(uncorroborated.body.error.message).not.toMatch(/confirmed or resolved/);

    const before = await call(`/api/v1/user/assistant/cases/${caseIds[0]}`, { who: users[0]! });
    expect(before.body.case.incident_summary).toBeNull();

    // The request log corroborates it: the same model and code fail often enough.
    await logRequests(users[0]!.id, m, "upstream_error", INCIDENT_THRESHOLDS.logMinErrors);
    await scanIncidents(gw.db.pool);
    const published = await update(incident.id, { publish: true });
    expect(published.status).toBe(200);
    expect(published.body.incident.published_at).toEqual(expect.any(String));
    expect(published.body.incident.affected_users).not.toBeNull();
    expect(published.body.incident.technical).not.toBeNull();

    for (const [i, u] of users.entries()) {
      const detail = await call(`/api/v1/user/assistant/cases/${caseIds[i]}`, { who: u });
      expect(detail.status).toBe(200);
      expect(userCaseDetailSchema.safeParse(detail.body).success).toBe(true);
      expect(detail.body.case.incident_summary).toBe(SUMMARY);
      for (const word of ["affected_users", "technical", "distinct_users", "error_rate", "corroborated", incident.id]) {
        expect(detail.text).not.toContain(word);
      }
      const page = await call("/api/v1/user/assistant/cases", { who: u });
      expect(page.text).not.toContain("distinct_users");
      expect(page.text).not.toContain(incident.id);
    }

    const resolved = await update(incident.id, { status: "resolved" });
    expect(resolved.body.incident).toMatchObject({ status: "resolved", published_at: published.body.incident.published_at });
    expect((await list()).map((i) => i.id)).not.toContain(incident.id);
    expect((await update(incident.id, { status: "confirmed" })).status).toBe(409);

    const withdrawn = await update(incident.id, { publish: false });
    expect(withdrawn.body.incident.published_at).toBeNull();
    expect((await call(`/api/v1/user/assistant/cases/${caseIds[0]}`, { who: users[0]! })).body.case.incident_summary).toBeNull();
  });

  it("refuses an unknown field or an empty summary with a 400 naming it", async () => {
    const m = model();
    await logRequests(users[0]!.id, m, "upstream_error", INCIDENT_THRESHOLDS.logMinErrors);
    await scanIncidents(gw.db.pool);
    const incident = (await list()).find((i) => i.public_model === m)!;
    const empty = await update(incident.id, { public_summary: " " });
    expect(empty.status).toBe(400);
    expect(empty.body.error.param).toBe("public_summary");
    expect((await update(incident.id, { technical: {} })).status).toBe(400);
  });
});

describe("the scan on demand and incident ids", () => {
  it("POST /incidents/scan runs the scan now and answers what it raised, then what it refreshed; admin-only", async () => {
    const m = model();
    await logRequests(users[0]!.id, m, "upstream_timeout", INCIDENT_THRESHOLDS.logMinErrors);
    expect((await call("/api/v1/assistant/incidents/scan", { method: "POST", who: users[0]! })).status).toBe(403);
    const first = await call("/api/v1/assistant/incidents/scan", { method: "POST", who: admin });
    expect(first.status).toBe(200);
    expect(incidentScanResultSchema.safeParse(first.body).success).toBe(true);
    const raised = (first.body.raised as { id: string; public_model: string }[]).filter((i) => i.public_model === m);
    expect(raised).toHaveLength(1);
    const again = await call("/api/v1/assistant/incidents/scan", { method: "POST", who: admin });
    expect((again.body.raised as { id: string }[]).map((i) => i.id)).not.toContain(raised[0]!.id);
    expect((again.body.refreshed as { id: string }[]).map((i) => i.id)).toContain(raised[0]!.id);
  });

  it("an incident is updated by an unambiguous prefix of its id; an ambiguous one is 400 ambiguous_id", async () => {
    const head = randomUUID().slice(0, 8);
    for (const tail of ["aaaa-4aaa-8aaa-aaaaaaaaaaaa", "bbbb-4bbb-8bbb-bbbbbbbbbbbb"]) {
      await gw.db.pool.query("insert into support_incidents (id, public_model, error_code, title) values ($1, $2, 'upstream_error', 't')", [
        `${head}-${tail}`,
        model(),
      ]);
    }
    const confirmed = await update(`${head}-a`, { status: "confirmed" });
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.incident).toMatchObject({ id: `${head}-aaaa-4aaa-8aaa-aaaaaaaaaaaa`, status: "confirmed" });
    const ambiguous = await update(head, { status: "confirmed" });
    expect(ambiguous.status).toBe(400);
    expect(ambiguous.body.error.code).toBe("ambiguous_id");
    expect((await update(`${head}-c`, {})).status).toBe(404);
  });
});
