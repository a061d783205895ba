import { randomUUID } from "node:crypto";
import { chmod, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatewayBin, tempDir } from "../helpers/cli.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";
import { openTerminal, type Terminal } from "../helpers/tmux.js";
import { createWorkerClient } from "../../worker-kit/client/worker-client.js";
import { MANUAL_USAGE } from "../../worker-kit/tui/state/manual-job.js";

// The support engineer's terminal UI as a user meets it: the built `gateway support` in a real pseudo-terminal
// (tmux, 80x24) against a real gateway and database, keys typed as a person would, the screen read back. A shift:
// a user's case is worked by hand from the job screen; a worker claims the answer to the user's next message and
// staff take the case over under it (the worker's answer is then discarded), reply in $EDITOR, resume, resolve
// (asked first), are refused a reply on the resolved case before any editor opens, reopen it; the queue shows a
// new case by itself; an incident is published (asked first).

const BOT = "bot-token-for-the-support-tui-0123456789";
const PASSWORD = "password-for-the-support-tui";
const STAFF = "staff@example.test";
const ANSWER = "Answer-typed-in-the-editor";

let gw: TestGateway;
let work: Awaited<ReturnType<typeof tempDir>>;
let term: Terminal;
let caseId: string;
let userToken: string;
let userId: string;

const q = <T extends Record<string, unknown>>(text: string, values: unknown[] = []) =>
  gw.db.pool.query<T>(text, values).then((r) => r.rows);

const caseRow = async () =>
  (await q<{ status: string; staff_hold: boolean }>("select status, staff_hold from support_cases where id = $1", [caseId]))[0];

async function userMessage(content: string) {
  const res = await fetch(`${gw.url}/api/v1/user/assistant/cases/${caseId}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${userToken}` },
    body: JSON.stringify({ content }),
  });
  expect(res.status).toBeLessThan(300);
}

/** A case on a new failed request of the user's, opened through the user route; its id. */
async function openCase(question: string): Promise<string> {
  const requestId = `req_${randomUUID().replaceAll("-", "")}`;
  await q(
    `insert into request_logs (request_id, user_id, key_id, route, client_protocol, public_model, upstream_model, provider, fallback_path,
       status, error_class, error_code, input_tokens, output_tokens, cached_tokens, quota_charged, usage_source, latency_ms, ttfb_ms,
       streamed, received_at, created_at)
     values ($1, $2, null, '/v1/chat/completions', 'openai', 'm1', 'm1-upstream', 'main', '{}', 502, 'upstream', 'upstream_error', 10, 0, 0,
       0, 'none', 12.5, null, false, now(), now())`,
    [requestId, userId],
  );
  const opened = await fetch(`${gw.url}/api/v1/user/assistant/cases`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${userToken}` },
    body: JSON.stringify({ request_id: requestId, locale: "en", question }),
  });
  expect(opened.status).toBe(201);
  return ((await opened.json()) as { case: { id: string } }).case.id;
}

/** Every line of the screen fits the terminal's width. */
async function fits(columns: number) {
  for (const line of await term.screen()) expect(line.length, line).toBeLessThanOrEqual(columns);
}

beforeAll(async () => {
  work = await tempDir("gateway-e2e-tui-");
  gw = await startTestGateway({ env: { SUPPORT_BOT_TOKEN: BOT } });
  await gw.services.auth.users.create({ email: STAFF, password: PASSWORD, role: "admin" });
  const user = await gw.services.auth.users.create({ email: "user@example.test", password: PASSWORD });
  userId = user.id;
  userToken = (await logIn(gw.url, "user@example.test", PASSWORD)).token;
  caseId = await openCase("Why did my request fail?");
  // A confirmed incident the request log corroborated, with its summary: ready for staff to publish.
  await q(
    `insert into support_incidents (public_model, error_code, title, status, public_summary, corroborated_at)
     values ('m1', 'upstream_error', 'm1 failing with upstream_error', 'confirmed', 'Answers from m1 fail; we are on it.', now())`,
  );

  // The editor a person would use, made deterministic: it writes the same text into whatever file it is given.
  const editor = path.join(work.dir, "editor.sh");
  await writeFile(editor, `#!/bin/sh\nprintf '%s\\n' '${ANSWER}' > "$1"\n`);
  await chmod(editor, 0o755);
  term = await openTerminal([process.execPath, gatewayBin, "support", "--url", gw.url, "--email", STAFF], {
    cwd: work.dir,
    env: { GATEWAY_PASSWORD: PASSWORD, SUPPORT_BOT_TOKEN: BOT, EDITOR: editor, VISUAL: "" },
  });
});

afterAll(async () => {
  await term?.close();
  await gw?.close();
  await work?.remove();
});

describe("gateway support (the terminal UI)", () => {
  it("a shift: works a job by hand, takes a case over under a worker, replies, resolves, reopens, publishes an incident; fits, resizes, quits", async () => {
    // Logged in at once (email from the option, password from the environment): the queue shows the case, by the
    // id prefix the CLI accepts, who asked and what.
    await term.waitFor(new RegExp(`${caseId.slice(0, 8)} open +user@example.test +.* Why did my request fail\\?`));
    await fits(80);

    // Working the case's answer job by hand: claim, the lease counts down, the answer comes from $EDITOR.
    await term.keys("3");
    await term.waitFor(/claim/);
    await term.keys("c");
    await term.waitFor(/answer · case/);
    await term.waitFor(/\d\d:\d\d/);
    await fits(80);
    await term.keys("e");
    await term.waitFor(new RegExp(ANSWER));
    // Completing publishes the answer: it asks first.
    await term.keys("s");
    await term.waitFor(/complete job [0-9a-f]{8} as answer\? \[y\/N\]/);
    await term.keys("y");
    await term.waitFor(/published/);
    const [job] = await q<{ status: string }>("select status from support_jobs where case_id = $1 and kind = 'answer'", [caseId]);
    expect(job?.status).toBe("completed");

    // The case: the published answer is in the transcript; take it over, reply in $EDITOR, resume.
    // The queue's footer, not the model's name: the job screen shows that too, and an Enter sent while the
    // queue is still loading opens nothing (CI once sent it then).
    await term.keys("1");
    await term.waitFor(/page 1 · 1 case/);
    await term.keys("Enter");
    await term.waitFor(/upstream_error/);
    // The transcript is below the facts and the card: a page down brings it up.
    await term.keys("NPage");
    await term.waitFor(new RegExp(ANSWER));
    // The user writes again; a worker claims the answer; staff take the case over under it.
    const worker = createWorkerClient({ baseUrl: gw.url, botToken: BOT });
    await userMessage("Still failing, please help.");
    const [claimed] = await worker.claim({ limit: 1, lease_seconds: 120, worker_id: "e2e-worker" });
    expect(claimed?.case_id).toBe(caseId);
    await term.keys("t");
    await term.waitFor(/taken over/);
    expect(await caseRow()).toMatchObject({ staff_hold: true });
    const late = await worker.complete(claimed!.id, {
      lease_token: claimed!.lease_token,
      revision: claimed!.revision,
      content: "An automatic answer, too late.",
      card: null,
      evidence: [],
      usage: MANUAL_USAGE,
      disposition: "answer",
    });
    expect(late.outcome).toMatch(/^discarded/);
    await term.keys("m");
    await term.waitFor(/reply sent/);
    const staffMessages = await q<{ content: string }>("select content from support_messages where case_id = $1 and role = 'staff'", [
      caseId,
    ]);
    expect(staffMessages.map((m) => m.content.trim())).toEqual([ANSWER]);
    await term.keys("u");
    await term.waitFor(/resumed: automatic answers/);
    expect(await caseRow()).toMatchObject({ staff_hold: false });
    await fits(80);

    // Resolving asks first; a reply on the resolved case is refused before the editor opens; R reopens it.
    await term.keys("x");
    await term.waitFor(/resolve case [0-9a-f]{8}\? \[y\/N\]/);
    await term.keys("y");
    await term.waitFor(/resolved: R reopens it/);
    expect(await caseRow()).toMatchObject({ status: "resolved" });
    await term.keys("m");
    await term.waitFor(/the case is resolved: R reopens it, then m replies/);
    expect(await q("select 1 from support_messages where case_id = $1 and role = 'staff'", [caseId])).toHaveLength(1);
    await term.keys("R");
    await term.waitFor(/reopened: m replies/);
    expect(await caseRow()).toMatchObject({ status: "open" });

    // Back in the queue on the same row; a case another user opens meanwhile appears by itself (no r).
    await term.keys("Escape");
    await term.waitFor(new RegExp(`> ${caseId.slice(0, 8)}`));
    const second = await openCase("A second question");
    await term.waitFor(new RegExp(`${second.slice(0, 8)} .*A second question`), 30_000);
    await term.waitFor(new RegExp(`> ${caseId.slice(0, 8)}`));

    // The incidents view, then a bigger terminal: the UI lays itself out again.
    // The screen's own text, not the help bar's "2 incidents", which every screen shows.
    const incidentsShown = /No candidate or confirmed incidents|Incidents \(\d+\)/;
    await term.keys("2");
    await term.waitFor(/confirmed +m1 +upstream_error/);
    await term.keys("p");
    await term.waitFor(/publish incident .*\? \[y\/N\]/);
    await term.keys("y");
    await term.waitFor(/published: m1 failing/);
    expect((await q<{ published: boolean }>("select published_at is not null as published from support_incidents"))[0]?.published).toBe(
      true,
    );
    await term.resize(100, 30);
    await term.waitFor(incidentsShown);
    expect(await term.screen()).toHaveLength(30);
    await fits(100);

    await term.keys("q");
    for (let i = 0; i < 50 && !(await term.exited()); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await term.exited()).toBe(true);
    // Quitting logged the session out.
    const live = await q<{ n: string }>(
      "select count(*)::text as n from sessions s join users u on u.id = s.user_id where u.email = $1 and s.revoked_at is null",
      [STAFF],
    );
    expect(live[0]?.n).toBe("0");
  }, 240_000);
});
