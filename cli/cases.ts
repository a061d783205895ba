import { Command } from "commander";
import { errors } from "../src/errors.js";
import { changeAsStaff, listStaffCases, staffCaseDetail } from "../src/support/staff/staff.js";
import type { StaffCaseResult } from "../src/support/staff/staff-wire.js";
import { LIST_LIMIT } from "../src/support/wire.js";
import { withServices, type CommonOptions } from "./context.js";
import { withCommonOptions } from "./options.js";
import { action, printJson, printTable } from "./output.js";

// `gateway cases`: the staff's view of support cases for operators (docs/cli.md). The logic is the staff
// routes' own (src/support/staff/staff.ts), so a takeover here holds answers exactly as one from the dashboard does.

const listColumns = ["id", "status", "staff_hold", "revision", "origin", "request_id", "problem", "updated_at"];

function parseLimit(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < LIST_LIMIT.min || n > LIST_LIMIT.max) {
    throw errors.badRequest(`--limit must be an integer from ${LIST_LIMIT.min} to ${LIST_LIMIT.max}.`, "limit");
  }
  return n;
}

const CHANGES = {
  takeover: { description: "take a case over: staff hold on, answers in flight cannot publish", done: "took over" },
  resume: { description: "end the staff hold: workers answer again", done: "resumed" },
  resolve: { description: "resolve a case", done: "resolved" },
  reopen: { description: "open a resolved case again (a new revision; the staff hold stays as it was)", done: "reopened" },
} as const;

function printChange(result: StaffCaseResult, done: string): void {
  const c = result.case;
  process.stdout.write(`${done} case ${c.id}: ${c.status}, staff hold ${c.staff_hold ? "on" : "off"}, revision ${c.revision}\n`);
}

export function casesCommand(): Command {
  const cases = new Command("cases");

  withCommonOptions(cases.command("list").description("list support cases, newest first"))
    .option("--limit <n>", `cases per page (${LIST_LIMIT.min}..${LIST_LIMIT.max})`, String(LIST_LIMIT.default))
    .option("--cursor <cursor>", "next_cursor of the previous page")
    .action(
      action(async (opts: CommonOptions & { limit: string; cursor?: string }) => {
        const limit = parseLimit(opts.limit);
        const page = await withServices(opts, (s) => listStaffCases(s.pool, { limit, cursor: opts.cursor }));
        if (opts.json) return printJson(page);
        printTable(
          page.cases.map((c) => ({
            id: c.id,
            status: c.status,
            staff_hold: c.staff_hold,
            revision: c.revision,
            origin: c.source_ref === null ? `user:${c.owner_user_id}` : `chat:${c.source_ref}`,
            request_id: c.request_id,
            problem: c.problem,
            updated_at: c.updated_at,
          })),
          listColumns,
        );
        if (page.next_cursor) process.stdout.write(`next page: --cursor ${page.next_cursor}\n`);
      }),
    );

  withCommonOptions(cases.command("show").description("show a case with its transcript, drafts and jobs"))
    .argument("<id>", "case id")
    .action(
      action(async (id: string, opts: CommonOptions) => {
        const detail = await withServices(opts, (s) => staffCaseDetail(s.pool, id));
        if (opts.json) return printJson(detail);
        const c = detail.case;
        const origin = c.source_ref === null ? `user ${c.owner_user_id}` : `chat platform ${c.source_ref}`;
        process.stdout.write(
          `case ${c.id} (${origin}): ${c.status}, staff hold ${c.staff_hold ? "on" : "off"}, revision ${c.revision}, locale ${c.locale}\n`,
        );
        if (c.card) process.stdout.write(`problem: ${c.card.problem}\nnext step: ${c.card.next_step}\n`);
        process.stdout.write(`\nmessages${detail.history_truncated ? " (latest only)" : ""}:\n`);
        printTable(detail.messages as unknown as Record<string, unknown>[], ["created_at", "role", "author", "content"]);
        process.stdout.write("\njobs:\n");
        printTable(detail.jobs as unknown as Record<string, unknown>[], ["id", "kind", "status", "revision", "attempts", "error_code"]);
        if (detail.drafts.length > 0) process.stdout.write(`\n${detail.drafts.length} private draft(s): see --json\n`);
      }),
    );

  for (const [change, what] of Object.entries(CHANGES) as [keyof typeof CHANGES, (typeof CHANGES)[keyof typeof CHANGES]][]) {
    withCommonOptions(cases.command(change).description(what.description))
      .argument("<id>", "case id")
      .action(
        action(async (id: string, opts: CommonOptions) => {
          const result = await withServices(opts, (s) => changeAsStaff(s.pool, id, change, "cli"));
          if (opts.json) printJson(result);
          else printChange(result, what.done);
        }),
      );
  }
  return cases;
}
