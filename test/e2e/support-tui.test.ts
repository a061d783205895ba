import { randomUUID } from "node:crypto";
import { chmod, writeFile } from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatewayBin, tempDir } from "../helpers/cli.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";
import { logIn } from "../helpers/login.js";
import { openTerminal, type Terminal } from "../helpers/tmux.js";

// The support engineer's terminal UI as a user meets it: the built `gateway support` in a real pseudo-terminal
// (tmux, 80x24) against a real gateway and database, keys typed as a person would, the screen read back. A user's
// case is worked by hand from the job screen, then taken over, replied to in $EDITOR and resumed from the case view.

const BOT = "bot-token-for-the-support-tui-0123456789";
const PASSWORD = "password-for-the-support-tui";
const STAFF = "staff@example.test";
const ANSWER = "Answer-typed-in-the-editor";

let gw: TestGateway;
let work: Awaited<ReturnType<typeof tempDir>>;
let term: Terminal;
let caseId: string;

const q = <T extends Record<string, unknown>>(text: string, values: unknown[] = []) =>
  gw.db.pool.query<T>(text, values).then((r) => r.rows);

/** Every line of the screen fits the terminal's width. */
async function fits(columns: number) {
  for (const line of await term.screen()) expect(line.length, line).toBeLessThanOrEqual(columns);
}

beforeAll(async () => {
  work = await tempDir("gateway-e2e-tui-");
  gw = await startTestGateway({ env: { SUPPORT_BOT_TOKEN: BOT } });
  await gw.services.auth.users.create({ email: STAFF, password: PASSWORD, role: "admin" });
  const user = await gw.services.auth.users.create({ email: "user@example.test", password: PASSWORD });
  const requestId = `req_${randomUUID().replaceAll("-", "")}`;
  await q(
    `insert into request_logs (request_id, user_id, key_id, route, client_protocol, public_model, upstream_model, provider, fallback_path,
       status, error_class, error_code, input_tokens, output_tokens, cached_tokens, quota_charged, usage_source, latency_ms, ttfb_ms,
       streamed, received_at, created_at)
     values ($1, $2, null, '/v1/chat/completions', 'openai', 'm1', 'm1-upstream', 'main', '{}', 502, 'upstream', 'upstream_error', 10, 0, 0,
       0, 'none', 12.5, null, false, now(), now())`,
    [requestId, user.id],
  );
  const { token } = await logIn(gw.url, "user@example.test", PASSWORD);
  const opened = await fetch(`${gw.url}/api/v1/user/assistant/cases`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify({ request_id: requestId, locale: "en", question: "Why did my request fail?" }),
  });
  expect(opened.status).toBe(201);
  caseId = ((await opened.json()) as { case: { id: string } }).case.id;

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
  it("logs in, works a job by hand, then takes the case over, replies and resumes; fits 80x24, resizes, quits", async () => {
    // Logged in at once (email from the option, password from the environment): the queue shows the case.
    await term.waitFor(/m1/);
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
    await term.keys("s");
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
    await term.keys("t");
    await term.waitFor(/taken over/);
    expect((await q<{ staff_hold: boolean }>("select staff_hold from support_cases where id = $1", [caseId]))[0]?.staff_hold).toBe(true);
    await term.keys("m");
    await term.waitFor(/reply sent/);
    const staffMessages = await q<{ content: string }>("select content from support_messages where case_id = $1 and role = 'staff'", [
      caseId,
    ]);
    expect(staffMessages.map((m) => m.content.trim())).toEqual([ANSWER]);
    await term.keys("u");
    await term.waitFor(/resumed: automatic answers/);
    expect((await q<{ staff_hold: boolean }>("select staff_hold from support_cases where id = $1", [caseId]))[0]?.staff_hold).toBe(false);
    await fits(80);

    // The incidents view, then a bigger terminal: the UI lays itself out again.
    // The screen's own text, not the help bar's "2 incidents", which every screen shows.
    const incidentsShown = /No candidate or confirmed incidents|Incidents \(\d+\)/;
    await term.keys("2");
    await term.waitFor(incidentsShown);
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
  }, 120_000);
});
