import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { staffCasePageSchema, staffCaseResultSchema } from "../../worker-kit/wire/staff.js";
import { errorLines, gateway, tempDir } from "../helpers/cli.js";
import { createTestDatabase, type TestDatabase } from "../helpers/db.js";

// `gateway cases` on a database the test fills itself (DATABASE_URL): the staff's logic from the command line,
// JSON for scripts, a small table for people, one line on stderr for an error.
describe("gateway cases", () => {
  let work: Awaited<ReturnType<typeof tempDir>>;
  let db: TestDatabase;
  let caseId: string;
  const run = (...args: string[]) => gateway(args, { cwd: work.dir, env: { DATABASE_URL: db.url } });

  beforeAll(async () => {
    work = await tempDir("gateway-e2e-cases-");
    db = await createTestDatabase();
    const { rows } = await db.pool.query<{ id: string }>(
      "insert into support_cases (source_ref, locale) values ('chan-e2e', 'en') returning id",
    );
    caseId = rows[0]!.id;
    await db.pool.query("insert into support_messages (case_id, role, content, source_message_id) values ($1, 'user', 'it fails', 'm1')", [
      caseId,
    ]);
  });
  afterAll(async () => {
    await db?.drop();
    await work?.remove();
  });

  it("lists, takes over, shows, resumes and resolves; errors are one line", async () => {
    const listed = await run("cases", "list", "--json");
    expect(listed.exitCode, listed.stderr).toBe(0);
    const page = staffCasePageSchema.parse(JSON.parse(listed.stdout));
    expect(page.cases.map((c) => [c.id, c.source_ref, c.owner_user_id, c.staff_hold])).toEqual([[caseId, "chan-e2e", null, false]]);

    const taken = await run("cases", "takeover", caseId, "--json");
    expect(taken.exitCode, taken.stderr).toBe(0);
    expect(staffCaseResultSchema.parse(JSON.parse(taken.stdout)).case).toMatchObject({
      id: caseId,
      staff_hold: true,
      revision: 2,
      staff_actor: "cli",
    });
    const { rows } = await db.pool.query("select staff_hold, revision, staff_actor from support_cases where id = $1", [caseId]);
    expect(rows[0]).toEqual({ staff_hold: true, revision: 2, staff_actor: "cli" });

    const table = await run("cases", "list");
    expect(table.stdout).toMatch(/^ID\s+STATUS\s+HOLD\s+REV\s+ORIGIN/);
    expect(table.stdout).toContain(`${caseId.slice(0, 8)}  open    held  2    chat:chan-e2e`);
    expect(table.stdout.split("\n").every((line) => line.length <= 120)).toBe(true);
    expect((await run("cases", "list", "--wide")).stdout).toContain(caseId);
    // The short id the table shows is accepted by every command.
    const shown = await run("cases", "show", caseId.slice(0, 8));
    expect(shown.exitCode, shown.stderr).toBe(0);
    expect(shown.stdout).toContain("chat platform chan-e2e");
    expect(shown.stdout).toContain("it fails");

    expect((await run("cases", "resume", caseId)).stdout).toBe(`resumed case ${caseId}: open, staff hold off, revision 2`);
    const resolved = JSON.parse((await run("cases", "resolve", caseId, "--json")).stdout) as { case: { status: string } };
    expect(resolved.case.status).toBe("resolved");
    expect((await run("cases", "reopen", caseId.slice(0, 13))).stdout).toBe(`reopened case ${caseId}: open, staff hold off, revision 4`);
    const again = await run("cases", "reopen", caseId);
    expect(again.exitCode).toBe(1);
    expect(errorLines(again.stderr)).toEqual(["gateway: The case is open: only a resolved case reopens."]);

    const unknown = await run("cases", "takeover", "00000000-0000-0000-0000-000000000000");
    expect(unknown.exitCode).toBe(1);
    expect(errorLines(unknown.stderr)).toEqual(["gateway: No such case."]);
    const badLimit = await run("cases", "list", "--limit", "500");
    expect(badLimit.exitCode).toBe(1);
    expect(errorLines(badLimit.stderr)).toHaveLength(1);
    expect(badLimit.stderr).toMatch(/--limit must be an integer from 1 to 100/);
  }, 120_000);

  it("refuses an ambiguous id prefix in one line saying how many matched; shows only a failed job's error", async () => {
    const head = caseId.slice(0, 8) === "abcdef01" ? "abcdef02" : "abcdef01";
    for (const tail of ["aaaa-4aaa-8aaa-aaaaaaaaaaaa", "bbbb-4bbb-8bbb-bbbbbbbbbbbb"]) {
      await db.pool.query("insert into support_cases (id, source_ref, locale) values ($1, $2, 'en')", [`${head}-${tail}`, `chan-${tail}`]);
    }
    const ambiguous = await run("cases", "show", head);
    expect(ambiguous.exitCode).toBe(1);
    expect(errorLines(ambiguous.stderr)).toEqual([`gateway: The id prefix ${head} matches 2 cases; give more of the id.`]);

    const target = `${head}-aaaa-4aaa-8aaa-aaaaaaaaaaaa`;
    await db.pool.query(
      `insert into support_jobs (case_id, kind, revision, status, attempts, error_code)
       values ($1, 'answer', 1, 'completed', 2, 'error_of_an_earlier_attempt'), ($1, 'answer', 1, 'failed', 3, 'lease_expired')`,
      [target],
    );
    const shown = await run("cases", "show", `${head}-a`);
    expect(shown.exitCode, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^ID\s+KIND\s+STATUS\s+REV\s+ATTEMPTS\s+ERROR/m);
    expect(shown.stdout).toMatch(/answer {2}failed +1 +3 +lease_expired/);
    expect(shown.stdout).not.toContain("error_of_an_earlier_attempt");
  }, 120_000);
});
