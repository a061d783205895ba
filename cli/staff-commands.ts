import { Option, type Command } from "commander";
import type { IncidentList, IncidentResult, IncidentScanResult, IncidentUpdate } from "@model-gateway/worker-kit/wire/incidents";
import type { StaffCaseDetail, StaffCasePage, StaffCaseResult } from "@model-gateway/worker-kit/wire/staff";
import { INCIDENT_STATUSES, LIST_LIMIT } from "@model-gateway/worker-kit/wire/support";
import { intIn } from "./options.js";
import { printJson } from "./output.js";
import { caseChangeLine, caseDetailLines, caseListLines, incidentLine, incidentListLines, scanLines } from "./staff-views.js";

// The staff's verbs on cases and incidents, defined once and mounted twice (docs/support.md, "Operator commands"):
// on the database (`gateway cases`, `gateway incidents`: no running gateway needed) and over HTTP (`gateway
// support cases`, `gateway support incidents`: any gateway, as a staff login). A family says how to reach the
// staff's operations and how to tell a failure; the verbs, their options and their output are the same.

/** What the verbs need; the staff client (HTTP) and the staff services (database) both provide it. */
export interface StaffOps {
  listCases(page: { limit?: number; cursor?: string }): Promise<StaffCasePage>;
  getCase(id: string): Promise<StaffCaseDetail>;
  change(id: string, change: CaseChange): Promise<StaffCaseResult>;
  listIncidents(): Promise<IncidentList>;
  updateIncident(id: string, update: IncidentUpdate): Promise<IncidentResult>;
  scanIncidents(): Promise<IncidentScanResult>;
}

export const CASE_CHANGES = ["takeover", "resume", "resolve", "reopen"] as const;
export type CaseChange = (typeof CASE_CHANGES)[number];

export interface VerbOptions {
  json?: boolean;
  wide?: boolean;
}

export interface StaffFamily<O extends VerbOptions> {
  /** Adds the family's options (where and who), `--json` among them. */
  options(cmd: Command): Command;
  /** Runs `work` with the staff's operations. */
  run<T>(opts: O, work: (ops: StaffOps) => Promise<T>): Promise<T>;
  /** One line on stderr and a non-zero exit status. */
  fail(err: unknown): never;
}

interface Printed {
  json: unknown;
  lines: string[];
}

/** A commander action: the options are the argument before the command; `--json` prints `json`, else the lines. */
function respond<O extends VerbOptions, A extends unknown[]>(family: StaffFamily<O>, work: (...args: A) => Promise<Printed>) {
  return async (...args: A) => {
    const opts = args[args.length - 2] as O;
    try {
      const out = await work(...args);
      if (opts.json) printJson(out.json);
      else process.stdout.write(`${out.lines.join("\n")}\n`);
    } catch (err) {
      family.fail(err);
    }
  };
}

const WIDE = "every column, full ids and timestamps (default: fit 120 columns)";
const ID = "the full id, or an unambiguous prefix of at least 8 hex digits";

/** `cases list` (and `support queue`): one page of cases, newest first. */
export function caseListVerb<O extends VerbOptions & { limit?: number; cursor?: string }>(cmd: Command, family: StaffFamily<O>): Command {
  return family
    .options(cmd)
    .option(
      "--limit <n>",
      `cases per page (${LIST_LIMIT.min}..${LIST_LIMIT.max}, default ${LIST_LIMIT.default})`,
      intIn(LIST_LIMIT.min, LIST_LIMIT.max, "--limit"),
    )
    .option("--cursor <cursor>", "next_cursor of the previous page")
    .option("--wide", WIDE)
    .action(
      respond(family, async (opts: O) => {
        const page = await family.run(opts, (ops) => ops.listCases({ limit: opts.limit, cursor: opts.cursor }));
        return { json: page, lines: caseListLines(page, opts.wide) };
      }),
    );
}

/** `cases show` (and `support case`): a case with its transcript, jobs and drafts' count. */
export function caseShowVerb<O extends VerbOptions>(cmd: Command, family: StaffFamily<O>): Command {
  return family
    .options(cmd)
    .argument("<id>", ID)
    .option("--wide", WIDE)
    .action(
      respond(family, async (id: string, opts: O) => {
        const detail = await family.run(opts, (ops) => ops.getCase(id));
        return { json: detail, lines: caseDetailLines(detail, opts.wide) };
      }),
    );
}

const CHANGE_TEXT: Record<CaseChange, { description: string; done: string }> = {
  takeover: { description: "take a case over: staff hold on, answers in flight cannot publish", done: "took over" },
  resume: { description: "end the staff hold: workers answer again", done: "resumed" },
  resolve: { description: "resolve a case", done: "resolved" },
  reopen: { description: "open a resolved case again (a new revision; the staff hold stays as it was)", done: "reopened" },
};

/** `list`, `show` and the four changes, under `cases`. */
export function caseVerbs<O extends VerbOptions>(cases: Command, family: StaffFamily<O>): void {
  caseListVerb(cases.command("list").description("list support cases, newest first"), family);
  caseShowVerb(cases.command("show").description("show a case with its transcript, drafts and jobs"), family);
  for (const change of CASE_CHANGES) {
    family
      .options(cases.command(change).description(CHANGE_TEXT[change].description))
      .argument("<id>", ID)
      .action(
        respond(family, async (id: string, opts: O) => {
          const result = await family.run(opts, (ops) => ops.change(id, change));
          return { json: result, lines: [caseChangeLine(result, CHANGE_TEXT[change].done)] };
        }),
      );
  }
}

/** The incidents list as `incidents list` prints it: `--json` the array (the shape scripts have read since it came). */
export function incidentListVerb<O extends VerbOptions>(
  cmd: Command,
  family: StaffFamily<O>,
  json: (list: IncidentList) => unknown,
): Command {
  return family
    .options(cmd)
    .option("--wide", WIDE)
    .action(
      respond(family, async (opts: O) => {
        const list = await family.run(opts, (ops) => ops.listIncidents());
        return { json: json(list), lines: incidentListLines(list, opts.wide) };
      }),
    );
}

function incidentChange<O extends VerbOptions>(family: StaffFamily<O>, body: (opts: O) => IncidentUpdate) {
  return respond(family, async (id: string, opts: O) => {
    const { incident } = await family.run(opts, (ops) => ops.updateIncident(id, body(opts)));
    return { json: incident, lines: [incidentLine(incident)] };
  });
}

type UpdateOptions = VerbOptions & { status?: IncidentUpdate["status"]; summary?: string; withdraw?: boolean };

/** `list`, `update`, `publish` and `scan`, under `incidents`. */
export function incidentVerbs<O extends UpdateOptions>(incidents: Command, family: StaffFamily<O>): void {
  incidentListVerb(
    incidents.command("list").description("candidate and confirmed incidents, with their private aggregates"),
    family,
    (list) => list.incidents,
  );

  family
    .options(incidents.command("update").description("move an incident one step (candidate → confirmed → resolved), set its summary"))
    .argument("<id>", ID)
    .addOption(new Option("--status <status>", "the next status").choices(INCIDENT_STATUSES))
    .option("--summary <text>", "the public summary the linked cases' users will read once published")
    .action(
      incidentChange(family, (opts) => ({
        ...(opts.status === undefined ? {} : { status: opts.status }),
        ...(opts.summary === undefined ? {} : { public_summary: opts.summary }),
      })),
    );

  family
    .options(incidents.command("publish").description("publish the summary (needs confirmed or resolved and technical corroboration)"))
    .argument("<id>", ID)
    .option("--summary <text>", "set the public summary first")
    .option("--withdraw", "withdraw a published summary instead")
    .action(
      incidentChange(family, (opts) => ({
        publish: opts.withdraw !== true,
        ...(opts.summary === undefined ? {} : { public_summary: opts.summary }),
      })),
    );

  family
    .options(
      incidents.command("scan").description("run the incident scan now (the 5-minute background pass); print what it raised or refreshed"),
    )
    .option("--wide", WIDE)
    .action(
      respond(family, async (opts: O) => {
        const scan = await family.run(opts, (ops) => ops.scanIncidents());
        return { json: scan, lines: scanLines(scan, opts.wide) };
      }),
    );
}
