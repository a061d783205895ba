import { randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { incidentListSchema } from "../../worker-kit/wire/incidents.js";
import { enqueueJob } from "../../src/support/worker-jobs/jobs-sql.js";
import { staffCaseDetailSchema, staffCasePageSchema, staffCaseResultSchema } from "../../worker-kit/wire/staff.js";
import { claimResponseSchema, completeResponseSchema, failResponseSchema } from "../../worker-kit/wire/support.js";
import { cleanEnv, gatewayBin, tempDir } from "../helpers/cli.js";
import { startTestGateway, type TestGateway } from "../helpers/gateway-app.js";

// `gateway support`'s non-interactive twins, run as the built binary against a real gateway (in this process, on
// a test database of its own) over HTTP: their --json validated with the wire schemas, their errors one line, and
// proof that they never load Ink (a resolve hook that refuses "ink", "react" and "ink-testing-library").

const BOT = "bot-token-for-the-support-cli-0123456789";
const PASSWORD = "password-for-the-support-cli";
const EMAIL = "staff@example.test";
const blockInk = path.resolve("test/helpers/block-ink.mjs");
// Each test runs the built CLI several times (a Node start each): minutes, not seconds, on a loaded CI machine.

let gw: TestGateway;
let work: Awaited<ReturnType<typeof tempDir>>;
const caseIds: string[] = [];

interface Run {
  env?: Record<string, string>;
  input?: string;
  /** Run under the hook that makes importing Ink or React throw. */
  withoutInk?: boolean;
}

function support(args: string[], opts: Run = {}) {
  const env = cleanEnv({ GATEWAY_URL: gw.url, GATEWAY_EMAIL: EMAIL, GATEWAY_PASSWORD: PASSWORD, SUPPORT_BOT_TOKEN: BOT, ...opts.env });
  const [file, argv] = opts.withoutInk
    ? ["node", ["--import", blockInk, gatewayBin, "support", ...args]]
    : [gatewayBin, ["support", ...args]];
  return execa(file, argv, { cwd: work.dir, env, extendEnv: true, reject: false, timeout: 60_000, input: opts.input ?? "" });
}

const json = (result: { exitCode?: number; stdout: string; stderr: string }) => {
  expect(result.exitCode, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as unknown;
};

async function newCase(): Promise<string> {
  const { rows } = await gw.db.pool.query<{ id: string }>("insert into support_cases (source_ref, locale) values ($1, 'en') returning id", [
    `chan-${randomUUID()}`,
  ]);
  await gw.db.pool.query("insert into support_messages (case_id, role, content) values ($1, 'user', 'my request failed')", [rows[0]!.id]);
  await enqueueJob(gw.db.pool, { caseId: rows[0]!.id, kind: "answer", revision: 1 });
  return rows[0]!.id;
}

beforeAll(async () => {
  work = await tempDir("gateway-e2e-support-");
  gw = await startTestGateway({ env: { SUPPORT_BOT_TOKEN: BOT } });
  await gw.services.auth.users.create({ email: EMAIL, password: PASSWORD, role: "admin" });
  for (let i = 0; i < 3; i++) caseIds.push(await newCase());
  await gw.db.pool.query(
    "insert into support_incidents (public_model, error_code, title) values ('m1', 'upstream_error', 'm1 is failing')",
  );
});

afterAll(async () => {
  await gw?.close();
  await work?.remove();
});

describe("gateway support (non-interactive)", () => {
  it("prints the queue, a case and the incidents as the staff routes answer them", async () => {
    const page = staffCasePageSchema.parse(json(await support(["queue", "--limit", "2", "--json"])));
    expect(page.cases).toHaveLength(2);
    expect(page.next_cursor).toEqual(expect.any(String));
    const rest = staffCasePageSchema.parse(json(await support(["queue", "--cursor", page.next_cursor!, "--json"])));
    expect([...page.cases, ...rest.cases].map((c) => c.id).sort()).toEqual([...caseIds].sort());

    const detail = staffCaseDetailSchema.parse(json(await support(["case", caseIds[0]!, "--json"])));
    expect(detail.case.id).toBe(caseIds[0]);
    expect(detail.messages.map((m) => m.content)).toEqual(["my request failed"]);

    const incidents = incidentListSchema.parse(json(await support(["incidents", "--json"])));
    expect(incidents.incidents.map((i) => [i.title, i.status])).toEqual([["m1 is failing", "candidate"]]);

    const human = await support(["incidents"]);
    expect(human.stdout).toMatch(/^ID\s+STATUS\s+TITLE\s+USERS\s+FAILURES/);
    expect(human.stdout).toMatch(/^[0-9a-f]{8} {2}candidate {2}m1 is failing {2}- /m);
    const queue = await support(["queue"]);
    expect(queue.stdout).toMatch(/^ID\s+STATUS\s+HOLD\s+REV\s+ORIGIN\s+MODEL\s+PROBLEM\s+QUESTION\s+UPDATED$/m);
    expect(queue.stdout).toContain(`${caseIds[0]!.slice(0, 8)}  open`);

    // Every twin logged out at the end: no session is left.
    const { rows } = await gw.db.pool.query<{ n: number }>("select count(*)::int as n from sessions where revoked_at is null");
    expect(rows[0]!.n).toBe(0);
  }, 120_000);

  it("offers the database family's verbs over HTTP, with the same output, short ids accepted", async () => {
    // A case of its own, without a job: the claims of the next test count the others' jobs.
    const { rows: made } = await gw.db.pool.query<{ id: string }>(
      "insert into support_cases (source_ref, locale) values ($1, 'en') returning id",
      [`chan-${randomUUID()}`],
    );
    const id = made[0]!.id;
    const short = id.slice(0, 8);
    const listed = staffCasePageSchema.parse(json(await support(["cases", "list", "--limit", "100", "--json"])));
    expect(listed.cases.map((c) => c.id).sort()).toEqual([...caseIds, id].sort());
    expect(json(await support(["cases", "show", short, "--json"]))).toEqual(json(await support(["case", id, "--json"])));

    expect((await support(["cases", "takeover", short])).stdout).toBe(`took over case ${id}: open, staff hold on, revision 2`);
    expect((await support(["cases", "resolve", short])).stdout).toBe(`resolved case ${id}: resolved, staff hold on, revision 3`);
    const reopened = staffCaseResultSchema.parse(json(await support(["cases", "reopen", short, "--json"])));
    expect(reopened.case).toMatchObject({
      id,
      status: "open",
      staff_hold: true,
      revision: 4,
      staff_actor: expect.stringMatching(/^admin:/),
    });
    const refused = await support(["cases", "reopen", short]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toMatch(/^gateway: 409 case_not_resolved: The case is open: only a resolved case reopens\. \(request \S+\)$/);
    expect((await support(["cases", "resume", id])).stdout).toMatch(/^resumed case .*staff hold off, revision 4$/m);

    const { rows } = await gw.db.pool.query<{ id: string }>(
      "insert into support_incidents (public_model, error_code, title) values ('m2', 'upstream_timeout', 'm2 times out') returning id",
    );
    const confirmed = await support(["incidents", "update", rows[0]!.id.slice(0, 8), "--status", "confirmed", "--json"]);
    expect(json(confirmed)).toMatchObject({ id: rows[0]!.id, status: "confirmed", updated_by: expect.stringMatching(/^admin:/) });
    const scan = await support(["incidents", "scan"]);
    expect(scan.exitCode, scan.stderr).toBe(0);
    expect(scan.stdout).toMatch(/^scan: \d+ raised, \d+ refreshed, \d+ case\(s\) linked$/m);
    const unknown = await support(["cases", "show", "00000000"]);
    expect(unknown.stderr).toMatch(/^gateway: 404 not_found: No such case\./);
  }, 180_000);

  it("claims, completes and fails jobs by hand with the bot token", async () => {
    const claimed = claimResponseSchema.parse(json(await support(["job", "claim", "--lease-seconds", "60", "--json"]))).jobs;
    expect(claimed).toHaveLength(1);
    const job = claimed[0]!;
    const card = path.join(work.dir, "card.json");
    await writeFile(
      card,
      JSON.stringify({ problem: "upstream", facts: [], hypotheses: [], checks: [], missing: [], next_step: "", confidence: 1 }),
    );
    const args = ["job", "complete", job.id, "--lease-token", job.lease_token, "--revision", String(job.revision)];
    const completed = completeResponseSchema.parse(
      json(await support([...args, "--content-file", "-", "--card-file", card, "--json"], { input: "The upstream failed; try again." })),
    );
    expect(completed).toMatchObject({ job_id: job.id, outcome: "published" });
    const { rows } = await gw.db.pool.query("select content from support_messages where job_id = $1", [job.id]);
    expect(rows).toEqual([{ content: "The upstream failed; try again." }]);

    const next = claimResponseSchema.parse(json(await support(["job", "claim", "--json"]))).jobs[0]!;
    const given = failResponseSchema.parse(
      json(await support(["job", "fail", next.id, "--lease-token", next.lease_token, "--error-code", "manual_release", "--json"])),
    );
    expect(given).toMatchObject({ job_id: next.id, status: "queued" });

    const last = claimResponseSchema.parse(json(await support(["job", "claim", "--json"]))).jobs[0]!;
    const failArgs = ["job", "fail", last.id, "--lease-token", last.lease_token, "--error-code", "manual_fail", "--permanent"];
    expect(await support(failArgs).then((r) => r.stdout)).toBe(`job ${last.id}: failed for good`);
    // Nothing else is claimable; only the job given back may be again, once its backoff (about 10 s) is over on a slow machine.
    const after = claimResponseSchema.parse(json(await support(["job", "claim", "--json"]))).jobs;
    expect(after.map((j) => j.id).filter((id) => id !== next.id)).toEqual([]);
  }, 120_000);

  it("refuses an invalid card file before calling, in one line", async () => {
    const card = path.join(work.dir, "bad-card.json");
    await writeFile(card, '{"problem": "x"}');
    const args = ["job", "complete", randomUUID(), "--lease-token", "t", "--revision", "1", "--content-file", card, "--card-file", card];
    const result = await support(args);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toBe(`gateway: ${card}: card.facts: Invalid input: expected array, received undefined`);
  }, 120_000);

  it("says in one line when the password is wrong or the bot token is missing", async () => {
    const wrong = await support(["queue", "--json"], { env: { GATEWAY_PASSWORD: "not-the-password" } });
    expect(wrong.exitCode).not.toBe(0);
    expect(wrong.stdout).toBe("");
    expect(wrong.stderr.trim().split("\n")).toHaveLength(1);
    expect(wrong.stderr).toMatch(/^gateway: 401 /);

    const noToken = await support(["job", "claim", "--json"], { env: { SUPPORT_BOT_TOKEN: "" } });
    expect(noToken.exitCode).not.toBe(0);
    expect(noToken.stderr).toBe("gateway: no bot token: set SUPPORT_BOT_TOKEN (the gateway's), or use --demo to read the demo's");
  }, 120_000);

  it("reads the password from stdin, and everything from the demo's saved credentials", async () => {
    const fromStdin = await support(["incidents", "--json", "--password-stdin"], { env: { GATEWAY_PASSWORD: "" }, input: `${PASSWORD}\n` });
    incidentListSchema.parse(json(fromStdin));

    const dataDir = path.join(work.dir, "demo");
    await mkdir(dataDir);
    const saved = { email: EMAIL, password: PASSWORD, key: "unused", url: gw.url, bot_token: BOT };
    await writeFile(path.join(dataDir, "demo-credentials.json"), JSON.stringify(saved));
    const bare = { GATEWAY_URL: "", GATEWAY_EMAIL: "", GATEWAY_PASSWORD: "", SUPPORT_BOT_TOKEN: "" };
    incidentListSchema.parse(json(await support(["incidents", "--demo", "--data-dir", dataDir, "--json"], { env: bare })));
    // Whatever is queued by now, the claim went through with the demo's bot token.
    claimResponseSchema.parse(json(await support(["job", "claim", "--demo", "--data-dir", dataDir, "--json"], { env: bare })));
  }, 120_000);

  it("never loads Ink or React in the twins, while the hook does stop whatever loads them", async () => {
    for (const args of [
      ["queue", "--json"],
      ["case", caseIds[1]!, "--json"],
      ["incidents", "--json"],
      ["job", "claim", "--json"],
    ]) {
      const result = await support(args, { withoutInk: true });
      expect(result.exitCode, `${args.join(" ")}: ${result.stderr}`).toBe(0);
    }

    // The hook bites: the UI's own modules cannot load under it, and the TUI path fails.
    const screen = path.resolve("worker-kit/dist/tui/job-screen.js");
    const direct = await execa("node", ["--import", blockInk, "--input-type=module", "-e", `await import(${JSON.stringify(screen)})`], {
      reject: false,
    });
    expect(direct.exitCode).not.toBe(0);
    expect(direct.stderr).toMatch(/blocked by the test hook: (ink|react)/);
    const tui = await support([], { withoutInk: true });
    expect(tui.exitCode).not.toBe(0);
    expect(tui.stderr).toMatch(/blocked by the test hook: (ink|react)/);
  }, 120_000);
});
