import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { controlResponseSchema, snapshotResponseSchema } from "../../worker-kit/wire/chat-platform.js";
import { changeAsStaff } from "../../src/support/staff/staff.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";

// The chat platform's internal endpoints over real HTTP and a real database (docs/support.md, "Chat platform"):
// the control check that creates nothing, the snapshot upsert with its dedup by source message id (sequential and
// concurrent), the takeover hold that snapshots never clear, the bot token and the refused owner fields.

const PASSWORD = "password-123";
const BOT = "bot-token-for-the-chatplatform-tests-0123";
const BASE = "/api/v1/internal/support/assistant/cases/chatplatform";

let gw: TestGateway;
let admin: { token: string; csrf: string };

beforeAll(async () => {
  gw = await startTestGateway({ env: { SUPPORT_BOT_TOKEN: BOT } });
  await gw.services.auth.users.create({ email: "staff@example.test", password: PASSWORD, role: "admin" });
  const { token, csrfToken } = await logIn(gw.url, "staff@example.test", PASSWORD);
  admin = { token, csrf: csrfToken };
});

afterAll(() => gw?.close());

async function post(path: string, body: unknown, authorization: string | null = `Bearer ${BOT}`) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (authorization !== null) headers.authorization = authorization;
  const res = await fetch(`${gw.url}${path}`, { method: "POST", headers, body: JSON.stringify(body) });
  const text = await res.text();
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: res.status, body: (text ? JSON.parse(text) : null) as Record<string, any> };
}

const channel = () => `chan_${randomUUID()}`;

async function snapshot(body: Record<string, unknown>) {
  const res = await post(BASE, body);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return snapshotResponseSchema.parse(res.body);
}

async function control(sourceRef: string) {
  const res = await post(`${BASE}/control`, { source_ref: sourceRef });
  expect(res.status).toBe(200);
  return controlResponseSchema.parse(res.body);
}

async function caseRow(sourceRef: string) {
  const { rows } = await gw.db.pool.query<{ id: string; owner_user_id: string | null; locale: string; staff_hold: boolean; card: unknown }>(
    "select id, owner_user_id, locale, staff_hold, card from support_cases where source_ref = $1",
    [sourceRef],
  );
  return rows;
}

async function messagesOf(caseId: string) {
  const { rows } = await gw.db.pool.query<{ source_message_id: string; role: string; content: string }>(
    "select source_message_id, role, content from support_messages where case_id = $1 order by id",
    [caseId],
  );
  return rows;
}

async function jobsOf(caseId: string) {
  const { rows } = await gw.db.pool.query<{ kind: string; revision: number }>(
    "select kind, revision from support_jobs where case_id = $1 order by created_at, id",
    [caseId],
  );
  return rows;
}

const msg = (id: string, content: string, role = "user") => ({ id, role, content });

describe("chat platform control", () => {
  it("answers staff_hold false for an unknown channel and creates nothing", async () => {
    const ref = channel();
    expect(await control(ref)).toEqual({ staff_hold: false });
    expect(await caseRow(ref)).toEqual([]);
  });

  it("needs the bot token (401) and a valid source_ref (400 naming it)", async () => {
    expect((await post(`${BASE}/control`, { source_ref: channel() }, null)).status).toBe(401);
    expect((await post(`${BASE}/control`, { source_ref: channel() }, "Bearer not-the-bot-token")).status).toBe(401);
    const bad = await post(`${BASE}/control`, { source_ref: "has space" });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe("source_ref");
  });
});

describe("chat platform snapshot", () => {
  it("creates the channel's case with no owner, stores scrubbed messages and queues one answer", async () => {
    const ref = channel();
    const first = await snapshot({
      source_ref: ref,
      locale: "pt-BR",
      messages: [msg("m1", "  my request failed\u0000\u202e \r\n"), msg("m2", "\u0007 "), msg("m3", "which request?", "assistant")],
    });
    // m2 scrubbed to nothing is dropped.
    expect(first).toMatchObject({ revision: 2, staff_hold: false, inserted: 2 });
    const [row] = await caseRow(ref);
    expect(row).toMatchObject({ id: first.case_id, owner_user_id: null, locale: "pt-BR", staff_hold: false });
    expect(await messagesOf(first.case_id)).toEqual([
      { source_message_id: "m1", role: "user", content: "my request failed" },
      { source_message_id: "m3", role: "assistant", content: "which request?" },
    ]);
    expect(await jobsOf(first.case_id)).toEqual([{ kind: "answer", revision: 2 }]);
    expect(await control(ref)).toEqual({ staff_hold: false, case_id: first.case_id, revision: 2 });
  });

  it("the same snapshot twice inserts nothing the second time, bumps nothing and queues nothing", async () => {
    const ref = channel();
    const body = { source_ref: ref, messages: [msg("a", "hello"), msg("b", "it says 502")] };
    const first = await snapshot(body);
    const again = await snapshot(body);
    expect(again).toEqual({ case_id: first.case_id, revision: first.revision, staff_hold: false, inserted: 0 });
    expect((await messagesOf(first.case_id)).map((m) => m.source_message_id)).toEqual(["a", "b"]);
    expect(await jobsOf(first.case_id)).toHaveLength(1);

    const next = await snapshot({ source_ref: ref, messages: [msg("a", "hello"), msg("b", "it says 502"), msg("c", "still failing")] });
    expect(next).toMatchObject({ inserted: 1, revision: first.revision + 1 });
    expect(await jobsOf(first.case_id)).toEqual([
      { kind: "answer", revision: first.revision },
      { kind: "answer", revision: first.revision + 1 },
    ]);
  });

  it("concurrent snapshots of a new channel make one case and no duplicate message", async () => {
    const ref = channel();
    const ids = Array.from({ length: 20 }, (_, i) => `m${i}`);
    const results = await Promise.all(
      Array.from({ length: 12 }, (_, k) =>
        snapshot({ source_ref: ref, messages: ids.slice(0, 10 + (k % 10) + 1).map((id) => msg(id, `text ${id}`)) }),
      ),
    );
    expect(new Set(results.map((r) => r.case_id)).size).toBe(1);
    const stored = await messagesOf(results[0]!.case_id);
    expect(stored.map((m) => m.source_message_id).sort()).toEqual([...ids].sort());
    expect(results.reduce((n, r) => n + r.inserted, 0)).toBe(ids.length);
    expect(await caseRow(ref)).toHaveLength(1);
  });

  it("a card replaces the case's card", async () => {
    const ref = channel();
    const card = { problem: "502s", facts: [], hypotheses: ["upstream"], checks: [], missing: [], next_step: "retry", confidence: 0.4 };
    await snapshot({ source_ref: ref, card, messages: [] });
    expect((await caseRow(ref))[0]!.card).toEqual(card);
    const replaced = Object.assign({}, card, { problem: "429s", confidence: 0.9 });
    await snapshot({ source_ref: ref, card: replaced, messages: [] });
    expect((await caseRow(ref))[0]!.card).toEqual(replaced);
  });

  it("a takeover persists across snapshots with staff_active false or absent until an explicit resume", async () => {
    const ref = channel();
    const created = await snapshot({ source_ref: ref, messages: [msg("u1", "help")] });
    const taken = await fetch(`${gw.url}/api/v1/assistant/cases/${created.case_id}/takeover`, {
      method: "POST",
      headers: { authorization: `Bearer ${admin.token}`, "x-csrf-token": admin.csrf, "content-type": "application/json" },
      body: "{}",
    });
    expect(taken.status).toBe(200);
    expect(await control(ref)).toMatchObject({ staff_hold: true, case_id: created.case_id });

    const absent = await snapshot({ source_ref: ref, messages: [msg("u1", "help"), msg("u2", "anyone?")] });
    expect(absent.staff_hold).toBe(true);
    const falsy = await snapshot({ source_ref: ref, staff_active: false, messages: [msg("u3", "hello?")] });
    expect(falsy.staff_hold).toBe(true);
    expect(await control(ref)).toEqual({ staff_hold: true, case_id: created.case_id, revision: falsy.revision });
    // User messages during the hold queue private staff drafts, never answers.
    expect((await jobsOf(created.case_id)).map((j) => j.kind)).toEqual(["answer", "staff_draft", "staff_draft"]);

    await changeAsStaff(gw.db.pool, created.case_id, "resume", "cli");
    expect((await control(ref)).staff_hold).toBe(false);
  });

  it("staff_active true takes the case over and bumps the revision; repeating it changes nothing", async () => {
    const ref = channel();
    const created = await snapshot({ source_ref: ref, messages: [] });
    expect(created).toMatchObject({ revision: 1, staff_hold: false, inserted: 0 });
    const held = await snapshot({ source_ref: ref, staff_active: true, messages: [] });
    expect(held).toMatchObject({ revision: 2, staff_hold: true });
    expect(await snapshot({ source_ref: ref, staff_active: true, messages: [] })).toMatchObject({ revision: 2, staff_hold: true });
    expect(await jobsOf(created.case_id)).toEqual([]);
  });

  it("a new user message opens a resolved channel case again", async () => {
    const ref = channel();
    const created = await snapshot({ source_ref: ref, messages: [msg("x1", "first")] });
    await changeAsStaff(gw.db.pool, created.case_id, "resolve", "cli");
    await snapshot({ source_ref: ref, messages: [msg("x1", "first"), msg("x2", "it broke again")] });
    const { rows } = await gw.db.pool.query("select status, resolved_at from support_cases where id = $1", [created.case_id]);
    expect(rows[0]).toEqual({ status: "open", resolved_at: null });
  });

  it("needs the bot token and refuses owner fields, unknown fields and unknown roles (400)", async () => {
    const ref = channel();
    expect((await post(BASE, { source_ref: ref, messages: [] }, null)).status).toBe(401);
    for (const extra of [{ owner_user_id: randomUUID() }, { owner: "someone@example.test" }, { account_id: "acc_1" }]) {
      const res = await post(BASE, Object.assign({ source_ref: ref, messages: [msg("o1", "hi")] }, extra));
      expect(res.status).toBe(400);
      expect(res.body.error.message).toContain(Object.keys(extra)[0]);
    }
    const role = await post(BASE, { source_ref: ref, messages: [msg("r1", "hi", "system")] });
    expect(role.status).toBe(400);
    expect(role.body.error.param).toBe("messages[0].role");
    const tooMany = await post(BASE, { source_ref: ref, messages: Array.from({ length: 101 }, (_, i) => msg(`t${i}`, "x")) });
    expect(tooMany.status).toBe(400);
    expect(await caseRow(ref)).toEqual([]);
  });
});
